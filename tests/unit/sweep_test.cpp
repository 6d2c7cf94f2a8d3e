// The sweep's manifests, its state rules (the from-scratch skill's skip-done / reopen / resume and
// queue order) and the from-current-best starting point (src/croq/sweep).
#include <gtest/gtest.h>

#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/sweep/sweep.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

using namespace croq;
using namespace croq::sweep;

TEST(SweepManifest, TheBuiltInTypicalShapesAreTheSkillsFourteenPerDtype) {
  Manifest m = builtin_manifest("typical", "", {});
  ASSERT_EQ(m.shapes.size(), 28u);  // gemm_sp f16 and e4m3
  EXPECT_EQ(shape_key_for(m.shapes[0], Mode::from_scratch), "f16_768x768x768_fs");
  EXPECT_EQ(shape_key_for(m.shapes[13], Mode::from_scratch), "f16_12288x4096x4096_fs");
  EXPECT_EQ(shape_key_for(m.shapes[14], Mode::from_scratch), "e4m3_768x768x768_fs");
  EXPECT_EQ(shape_key_for(m.shapes[2], Mode::from_current_best), "gemm_sp_f16_512x8192x8192");
  Manifest d = builtin_manifest("typical", "matmul", {"f16fp32"});
  ASSERT_EQ(d.shapes.size(), 14u);
  EXPECT_EQ(shape_key_for(d.shapes[5], Mode::from_scratch), "matmul_f16fp32_4096x32768x8192_fs");
  EXPECT_EQ(d.shapes[5].scenario, "sweep_n");
  EXPECT_THROW(builtin_manifest("typical", "conv", {}), Error);
  EXPECT_THROW(builtin_manifest("nope", "", {}), Error);
}

TEST(SweepManifest, ReadsTheSkillsManifestAsIsAndCroqsOwnForm) {
  json skill = json::parse(R"({"baselines": {"f16": "gemm_sp_f16.co"}, "build": {"arch": "sm_90a"},
      "typical_shapes_for_scratch": {"f16": [[768, 768, 768], {"M": 512, "N": 8192, "K": 8192}, "4096x1024x8192"],
                                     "e4m3": [[768, 768, 768]]}})");
  Manifest m = manifest_from_json(skill, "manifest.json", "", {});
  ASSERT_EQ(m.shapes.size(), 4u);
  std::set<std::string> keys;
  for (const auto& s : m.shapes) keys.insert(shape_key_for(s, Mode::from_scratch));
  EXPECT_TRUE(keys.count("f16_512x8192x8192_fs"));
  EXPECT_TRUE(keys.count("e4m3_768x768x768_fs"));
  EXPECT_EQ(manifest_from_json(skill, "manifest.json", "", {"e4m3"}).shapes.size(), 1u);

  json own = {{"schema", "croq-sweep-manifest-v1"}, {"operator", "matmul"}, {"dtypes", {"f32", "f16fp32"}},
              {"shapes", {{64, 64, 64}, {{"m", 128}, {"n", 64}, {"k", 32}, {"region", "near"}}}},
              {"keys", {"matmul_f32_96x96x96"}}};
  Manifest o = manifest_from_json(own, "own.json", "", {});
  ASSERT_EQ(o.shapes.size(), 5u);
  EXPECT_EQ(o.shapes[1].region, "near");
  EXPECT_EQ(shape_key_for(o.shapes[4], Mode::from_scratch), "matmul_f32_96x96x96");  // a key is used as given
  // Bad input names the field; nothing is accepted half.
  EXPECT_THROW(manifest_from_json(json{{"operator", "matmul"}, {"shapes", {{1, 2}}}}, "x", "", {}), Error);
  EXPECT_THROW(manifest_from_json(json{{"operator", "gemm_sp"}, {"dtypes", {"f16"}}, {"shapes", {{64, 64, 60}}}}, "x", "",
                                  {}),
               Error);  // 2:4 sparse needs K % 8 == 0
  EXPECT_THROW(manifest_from_json(json{{"operator", "matmul"}, {"dtypes", {"f99"}}, {"shapes", {{8, 8, 8}}}}, "x", "", {}),
               Error);
  EXPECT_THROW(manifest_from_json(json::object(), "x", "", {}), Error);
}

TEST(SweepManifest, ReadsTomlWhereCroqWasBuiltWithIt) {
  croq::test::TempDir dir;
  const auto file = dir.path() / "m.toml";
  atomic_write(file, "operator = \"matmul\"\ndtypes = [\"f32\"]\nshapes = [[64, 64, 64], \"128x64x32\"]\n");
  if (!toml_supported()) {
    EXPECT_THROW(load_manifest(file, "", {}), Error);
    GTEST_SKIP() << "croq was built without toml++ (libtomlplusplus-dev)";
  }
  Manifest m = load_manifest(file, "", {});
  ASSERT_EQ(m.shapes.size(), 2u);
  EXPECT_EQ(m.shapes[1].m, 128);
  atomic_write(file, "operator = \n");
  EXPECT_THROW(load_manifest(file, "", {}), Error);
}

TEST(SweepState, TheSkillsRulesSkipDoneReopenEarlyClosedAndResume) {
  const json done_full = {{"status", "done"}, {"mode", "from_scratch"}, {"current_iter", 150}};
  const json done_early = {{"status", "done"}, {"mode", "from_scratch"}, {"current_iter", 40}};
  const json active = {{"status", "active"}, {"mode", "from_scratch"}, {"current_iter", 12}};
  const json other_mode = {{"status", "active"}, {"mode", "from_current_best"}, {"current_iter", 12}};
  EXPECT_EQ(plan_for(done_full, Mode::from_scratch, 150, 150), Plan::skip_done);
  EXPECT_EQ(plan_for(done_early, Mode::from_scratch, 150, 40), Plan::reopen);
  EXPECT_EQ(plan_for(active, Mode::from_scratch, 150, 12), Plan::resume);
  EXPECT_EQ(plan_for(other_mode, Mode::from_scratch, 150, 0), Plan::start);
  EXPECT_EQ(plan_for(json(nullptr), Mode::from_scratch, 150, 0), Plan::start);
  // The ledger is the truth: rounds stored after the state's last write count, and a current_iter
  // the ledger does not back (edited by hand) counts for nothing.
  EXPECT_EQ(plan_for(json(nullptr), Mode::from_scratch, 150, 3), Plan::resume);
  EXPECT_EQ(plan_for(active, Mode::from_scratch, 150, 150), Plan::skip_done);
  EXPECT_EQ(plan_for(done_full, Mode::from_scratch, 150, 3), Plan::reopen);
  const json edited = {{"status", "active"}, {"mode", "from_scratch"}, {"current_iter", 150}};
  EXPECT_EQ(plan_for(edited, Mode::from_scratch, 150, 3), Plan::resume);
}

TEST(SweepState, TheQueueResumesActiveShapesFirstThenTheManifestThenFarAndNeedsScratchShapes) {
  Manifest m = builtin_manifest("typical", "gemm_sp", {"f16"});
  json state = {{"shapes",
                 {{"f16_768x768x768_fs", {{"status", "done"}, {"mode", "from_scratch"}, {"current_iter", 150}}},
                  {"f16_512x8192x8192_fs", {{"status", "done"}, {"mode", "from_scratch"}, {"current_iter", 33}}},
                  {"f16_4096x8192x512_fs", {{"status", "active"}, {"mode", "from_scratch"}, {"current_iter", 7}}},
                  {"f16_256x256x256", {{"status", "done"}, {"mode", "from_current_best"}, {"region", "far"},
                                       {"current_iter", 30}}},
                  {"f16_2048x2048x2048", {{"status", "needs_scratch"}, {"shape", {2048, 2048, 2048}}}},
                  {"e4m3_256x256x256", {{"status", "pending"}, {"region", "far"}}}}}};
  std::map<std::string, int> stored = {
      {"f16_768x768x768_fs", 150}, {"f16_512x8192x8192_fs", 33}, {"f16_4096x8192x512_fs", 7}};
  auto q = plan_sweep(state, m, Mode::from_scratch, 150, [&](const std::string& k) {
    return stored.count(k) ? stored[k] : 0;
  });
  ASSERT_EQ(q.size(), 16u);  // 14 + the far f16 shape + the needs_scratch one (not e4m3's)
  EXPECT_EQ(q[0].key, "f16_4096x8192x512_fs");
  EXPECT_EQ(q[0].plan, Plan::resume);
  EXPECT_EQ(q[0].origin, "state:active");
  EXPECT_EQ(q[1].key, "f16_768x768x768_fs");
  EXPECT_EQ(q[1].plan, Plan::skip_done);
  auto find = [&](const std::string& k) {
    for (const auto& x : q) if (x.key == k) return x;
    ADD_FAILURE() << k << " not in the queue";
    return QueueItem{};
  };
  EXPECT_EQ(find("f16_512x8192x8192_fs").plan, Plan::reopen);
  EXPECT_EQ(find("f16_256x256x256_fs").origin, "state:far");
  EXPECT_EQ(find("f16_2048x2048x2048_fs").origin, "state:needs_scratch");
  EXPECT_EQ(q.back().key, "f16_2048x2048x2048_fs");
}

TEST(SweepState, ADamagedStateFileIsRefusedAndLeftAsItIs) {
  croq::test::TempDir dir;
  StateFile sf(dir.path());
  EXPECT_EQ(sf.read()["shapes"].size(), 0u);
  sf.write(json{{"shapes", {{"a_fs", {{"status", "active"}}}}}});
  EXPECT_EQ(sf.read()["shapes"]["a_fs"].value("status", ""), "active");
  atomic_write(sf.path(), "{\"shapes\": [");
  try {
    sf.read();
    FAIL() << "a damaged state.json was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::corrupt);
  }
  EXPECT_EQ(*read_file(sf.path()), "{\"shapes\": [");
}

TEST(SweepStart, FromCurrentBestStartsFromTheBestKernelOfTheNearestTunedShape) {
  croq::test::TempDir dir;
  Workspace ws(dir.path());
  auto tuned = [&](const std::string& key, double tflops, int tile) {
    TaskRef t = make_task("cpu_test", "cpp", key, "croq-search");
    Ledger l(ws, t);
    StoreRequest q;
    q.iter = "iter001";
    q.kernel = "iter001_start";
    q.tflops = tflops;
    q.decision = "KEEP";
    q.bottleneck = "n/a";
    q.round = 0;
    q.idea = "start";
    q.extra = {{"params", {{"tile", tile}}}, {"family", "cpp_tiled"}};
    store_round(l, q, std::chrono::milliseconds(5000));
  };
  tuned("matmul_f32_1024x1024x1024", 1.0, 64);
  tuned("matmul_f32_256x256x256", 2.0, 32);
  tuned("gemm_sp_f32_320x320x320", 9.0, 16);  // another operator: ignored
  TaskRef target = make_task("cpu_test", "cpp", "matmul_f32_320x320x320", "croq-search");
  auto s = nearest_best(ws, target);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->task.shape.text, "matmul_f32_256x256x256");
  EXPECT_EQ(s->kernel, "iter001_start");
  EXPECT_EQ(s->params.value("tile", 0), 32);
  EXPECT_EQ(s->family, "cpp_tiled");
  TaskRef lone = make_task("cpu_test", "cpp", "matmul_bf16_64x64x64", "croq-search");
  EXPECT_FALSE(nearest_best(ws, lone));
}

TEST(SweepPlan, WorkersPerDeviceAutoSharesTheCoresAmongGpusForCroqsSearchOnly) {
  using croq::sweep::auto_workers_per_device;
  EXPECT_EQ(auto_workers_per_device("cuda", "search", 16, 1), 4);   // the H200 machine: 16 cores, one GPU
  EXPECT_EQ(auto_workers_per_device("cuda", "search", 128, 8), 4);  // 8 GPUs: 4 each, at most 4
  EXPECT_EQ(auto_workers_per_device("croqtile", "search", 32, 4), 2);
  EXPECT_EQ(auto_workers_per_device("triton", "search", 2, 1), 1);  // few cores: at least one
  EXPECT_EQ(auto_workers_per_device("cpp", "search", 64, 1), 1);    // the device is the CPU itself
  EXPECT_EQ(auto_workers_per_device("cuda", "agent", 64, 1), 1);    // one agent session per device
  EXPECT_EQ(auto_workers_per_device("cuda", "command", 64, 1), 1);
}

TEST(SweepDevices, GpusPicksByIndexOrUuidOnceEachAndNamesAnUnknownOne) {
  std::vector<Device> all = {{"0", "GPU-aaaa", "gpu0", "NVIDIA H200"},
                             {"1", "GPU-bbbb", "gpu1", "NVIDIA H200"},
                             {"2", "GPU-cccc", "gpu2", "NVIDIA H200"}};
  EXPECT_EQ(select_devices(all, "all").size(), 3u);
  EXPECT_EQ(select_devices(all, "").size(), 3u);
  auto picked = select_devices(all, "2, GPU-aaaa,0");
  ASSERT_EQ(picked.size(), 2u);
  EXPECT_EQ(picked[0].id, "2");
  EXPECT_EQ(picked[1].id, "0");  // by its UUID, once
  try {
    select_devices(all, "0,3");
    FAIL() << "device 3 is not there";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("'3'"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("0, 1, 2"), std::string::npos) << e.hint();
  }
  EXPECT_THROW(select_devices(all, " , "), Error);
}
