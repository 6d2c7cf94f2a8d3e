// The in-memory event ring (event_bus.hpp).
#include "croq/web/event_bus.hpp"

#include <fmt/format.h>

#include "croq/util/time.hpp"

namespace croq::web {

EventBus::EventBus(size_t capacity)
    : m_capacity(capacity),
      m_next_id(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count())) {}

uint64_t EventBus::publish(const std::string& kind, const std::string& task_uid, json data) {
  auto e = std::make_shared<Event>();
  e->kind = kind;
  e->task_uid = task_uid;
  json doc;
  {
    std::lock_guard lock(m_mutex);
    e->id = m_next_id++;
  }
  doc["id"] = e->id;
  doc["kind"] = kind;
  doc["task"] = task_uid;
  doc["at"] = now_iso8601();
  if (data.is_object()) {
    for (auto it = data.begin(); it != data.end(); ++it) doc[it.key()] = it.value();
  }
  e->data = std::move(doc);
  e->sse = fmt::format("id: {}\nevent: {}\ndata: {}\n\n", e->id, kind, dump_compact(e->data));
  {
    std::lock_guard lock(m_mutex);
    // Ids are taken before rendering; keep the ring ordered even if two publishers interleave.
    auto pos = m_ring.end();
    while (pos != m_ring.begin() && (*(pos - 1))->id > e->id) --pos;
    m_ring.insert(pos, e);
    while (m_ring.size() > m_capacity) m_ring.pop_front();
  }
  m_cv.notify_all();
  return e->id;
}

EventBus::Batch EventBus::wait_after(uint64_t after, std::chrono::milliseconds timeout, size_t max) {
  Batch b;
  std::unique_lock lock(m_mutex);
  auto ready = [&] { return m_closed || (!m_ring.empty() && m_ring.back()->id > after); };
  m_cv.wait_for(lock, timeout, ready);
  if (m_closed) {
    b.closed = true;
    return b;
  }
  if (m_ring.empty()) return b;
  if (after + 1 < m_ring.front()->id && after != 0) b.reset = true;
  // Binary search for the first id > after.
  auto it = std::upper_bound(m_ring.begin(), m_ring.end(), after,
                             [](uint64_t v, const EventPtr& e) { return v < e->id; });
  for (; it != m_ring.end() && b.events.size() < max; ++it) b.events.push_back(*it);
  return b;
}

uint64_t EventBus::last_id() const {
  std::lock_guard lock(m_mutex);
  return m_next_id - 1;
}

void EventBus::close() {
  {
    std::lock_guard lock(m_mutex);
    m_closed = true;
  }
  m_cv.notify_all();
}

bool EventBus::closed() const {
  std::lock_guard lock(m_mutex);
  return m_closed;
}

void EventBus::client_joined() {
  std::lock_guard lock(m_mutex);
  ++m_clients;
}
void EventBus::client_left() {
  std::lock_guard lock(m_mutex);
  --m_clients;
}
int EventBus::clients() const {
  std::lock_guard lock(m_mutex);
  return m_clients;
}

}  // namespace croq::web
