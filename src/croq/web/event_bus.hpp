// The monitor's stream of changes (round stored, task state changed, log line, task added), kept
// in memory as a bounded ring and handed to every event-stream client. Ids grow strictly, and
// start at the server's start time in microseconds, so that a client reconnecting after a server
// restart (Last-Event-ID from the old server) never mistakes new events for ones it has seen; a
// client whose last id has left the ring gets a `reset` event and reloads.
//
// Server-sent-events form of one event:
//   id: <id>\nevent: <kind>\ndata: {"id":..,"kind":..,"task":"<uid>","at":"..",...data}\n\n
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq::web {

struct Event {
  uint64_t id = 0;
  std::string kind;      // "round", "state", "log", "task", "sync"
  std::string task_uid;  // empty for server-wide events
  json data;
  std::string sse;       // the rendered server-sent-events block
};

using EventPtr = std::shared_ptr<const Event>;

class EventBus {
 public:
  explicit EventBus(size_t capacity = 50000);

  // Adds an event and wakes the waiters. Returns its id.
  uint64_t publish(const std::string& kind, const std::string& task_uid, json data);

  struct Batch {
    std::vector<EventPtr> events;
    bool reset = false;   // `after` is older than the oldest event kept
    bool closed = false;  // the bus is shutting down
  };
  // Events with id > after, waiting up to `timeout` for the first one. At most `max` events.
  Batch wait_after(uint64_t after, std::chrono::milliseconds timeout, size_t max = 1000);

  uint64_t last_id() const;
  void close();
  bool closed() const;

  // Connected stream clients (for the system panel).
  void client_joined();
  void client_left();
  int clients() const;

 private:
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<EventPtr> m_ring;
  size_t m_capacity;
  uint64_t m_next_id;
  bool m_closed = false;
  int m_clients = 0;
};

}  // namespace croq::web
