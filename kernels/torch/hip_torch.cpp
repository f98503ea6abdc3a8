#include "kernels/torch/hip_torch.h"

#include <c10/core/DeviceGuard.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/attention_inputs.h"
#include "kernels/parallel_for.h"
#include "kernels/search_range.h"

#if __has_include(<torch/version.h>)
#include <torch/version.h>
#endif
#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2
#define HIPSTUDIO_TORCH_SDPA 1
#endif

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
#include "kernels/cuda/decode_rows.h"
#include "kernels/cuda/hip_cuda.h"
#endif

namespace hipstudio::hip_torch {
namespace {

[[noreturn]] void fail(const std::string& m) { throw std::invalid_argument("HiP CUDA binding: " + m); }

std::string shape_str(const at::Tensor& t) {
  std::string s = "(";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + ")";
}

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
struct Shape {
  int64_t batch = 1, heads = 0, t = 0, d = 0;
  gpu::Strides strides;
};

// Accepts (heads, t, d) or (batch, heads, t, d) on CUDA with a contiguous last dimension.
Shape shape_of(const at::Tensor& x, const char* name) {
  if (!x.defined()) fail(std::string(name) + " is undefined");
  if (!x.is_cuda()) fail(std::string(name) + " must be a CUDA tensor (it is on " + x.device().str() + ")");
  if (x.dim() != 3 && x.dim() != 4) fail(std::string(name) + " must be 3-D or 4-D, got " + shape_str(x));
  if (x.stride(-1) != 1) fail(std::string(name) + " must have a contiguous last dimension (call .contiguous())");
  Shape s;
  const int o = x.dim() == 4 ? 1 : 0;
  if (o) s.batch = x.size(0), s.strides.b = x.stride(0);
  s.heads = x.size(o), s.t = x.size(o + 1), s.d = x.size(o + 2);
  s.strides.h = x.stride(o), s.strides.t = x.stride(o + 1);
  return s;
}

gpu::ElementType dtype_of(const at::Tensor& x) {
  switch (x.scalar_type()) {
    case at::kFloat: return gpu::ElementType::kF32;
    case at::kBFloat16: return gpu::ElementType::kBF16;
    case at::kHalf: return gpu::ElementType::kF16;
    default: fail(std::string("dtype ") + std::string(c10::toString(x.scalar_type())) + " is not float32, bfloat16 or float16");
  }
}

void require_ready() {
  const std::string s = gpu::device_status();
  if (!s.empty()) throw gpu::CudaError("HiP CUDA kernels unavailable: " + s);
}

// Positions as a validated device int64 tensor (undefined stays undefined).
at::Tensor device_positions(const at::Tensor& positions, int64_t tq, int64_t tk, const at::Device& dev) {
  if (!positions.defined()) {
    if (tq > tk) fail("Q has more queries (" + std::to_string(tq) + ") than K has keys (" + std::to_string(tk) + "): pass positions");
    return positions;
  }
  if (positions.dim() != 1 || positions.size(0) != tq || positions.scalar_type() != at::kLong)
    fail("positions must be int64 of shape (" + std::to_string(tq) + "), got " + shape_str(positions));
  const at::Tensor host = positions.to(at::kCPU).contiguous();
  const int64_t* p = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < tq; ++i)
    if (p[i] < 0 || p[i] >= tk) fail("position of query " + std::to_string(i) + " is " + std::to_string(p[i]) +
                                     ", outside [0, " + std::to_string(tk) + ")");
  return positions.to(dev).contiguous();
}

void check_pair(const at::Tensor& q, const Shape& qs, const at::Tensor& k, const Shape& ks, const char* kname) {
  if (k.device() != q.device()) fail(std::string(kname) + " is on " + k.device().str() + ", Q on " + q.device().str());
  if (k.scalar_type() != q.scalar_type()) fail(std::string(kname) + " and Q must have the same dtype");
  if (k.dim() != q.dim()) fail(std::string(kname) + " " + shape_str(k) + " and Q " + shape_str(q) + " differ in rank");
  if (ks.batch != qs.batch) fail(std::string(kname) + " and Q differ in batch");
  if (ks.d != qs.d) fail(std::string(kname) + " head dimension " + std::to_string(ks.d) + " differs from Q's " + std::to_string(qs.d));
  if (qs.heads % ks.heads != 0)
    fail("query heads (" + std::to_string(qs.heads) + ") must be a multiple of " + kname + " heads (" + std::to_string(ks.heads) + ")");
}

// The mask launch's inputs: Q, K, their shapes and strides, the parameters.
gpu::MaskLaunch mask_inputs(const at::Tensor& q, const Shape& qs, const at::Tensor& k, const Shape& ks, const hip::HipParams& p) {
  gpu::MaskLaunch l;
  l.q = q.data_ptr(), l.k = k.data_ptr(), l.dtype = dtype_of(q);
  l.q_stride = qs.strides, l.k_stride = ks.strides;
  l.batch = qs.batch, l.hq = qs.heads, l.hkv = ks.heads, l.tq = qs.t, l.tk = ks.t, l.d = qs.d, l.hip = p;
  return l;
}

// trace_head: the head to trace, kEveryHead for all of them (hq traces in *trace_buf), < 0 none.
constexpr int64_t kEveryHead = -2;
MaskTensors run_masks(const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p, const at::Tensor& positions,
                      int64_t trace_head, int64_t trace_qb, int64_t trace_batch, at::Tensor* trace_buf,
                      const MaskTensors* into = nullptr) {
  require_ready();
  const Shape qs = shape_of(q, "Q"), ks = shape_of(k, "K");
  check_pair(q, qs, k, ks, "K");
  c10::DeviceGuard guard(q.device());
  const at::Tensor pos = device_positions(positions, qs.t, ks.t, q.device());
  const int64_t qbs = (qs.t + p.b_q - 1) / p.b_q, kb = p.k / std::max<int64_t>(p.b_k, 1);
  const auto i32 = q.options().dtype(at::kInt), i64 = q.options().dtype(at::kLong);
  std::vector<int64_t> bshape, cshape;
  if (q.dim() == 4) bshape.push_back(qs.batch), cshape.push_back(qs.batch);
  bshape.insert(bshape.end(), {qs.heads, qbs, kb});
  cshape.insert(cshape.end(), {qs.heads, qbs});
  MaskTensors m;
  if (into) {
    auto check = [&](const at::Tensor& t, const std::vector<int64_t>& shape, at::ScalarType st, const char* name) {
      if (!t.defined() || t.sizes().vec() != shape || t.scalar_type() != st || !t.is_contiguous() || t.device() != q.device())
        fail(std::string("preallocated ") + name + " has the wrong shape, dtype, layout or device");
    };
    check(into->blocks, bshape, at::kInt, "blocks");
    check(into->counts, cshape, at::kInt, "counts");
    check(into->iterations, cshape, at::kInt, "iterations");
    check(into->branches, cshape, at::kLong, "branches");
    m = *into;
  } else {
    m.blocks = at::empty(bshape, i32);
    m.counts = at::empty(cshape, i32);
    m.iterations = at::empty(cshape, i32);
    m.branches = at::empty(cshape, i64);
  }
  gpu::MaskLaunch l = mask_inputs(q, qs, k, ks, p);
  l.positions = pos.defined() ? pos.data_ptr<int64_t>() : nullptr;
  l.blocks = m.blocks.data_ptr<int32_t>(), l.counts = m.counts.data_ptr<int32_t>();
  l.iterations = m.iterations.data_ptr<int32_t>(), l.branches = m.branches.data_ptr<int64_t>();
  if (trace_buf) {
    const int64_t traces = trace_head == kEveryHead ? qs.heads : 1;
    *trace_buf = at::empty({traces * static_cast<int64_t>(gpu::mask_trace_bytes(kb))}, q.options().dtype(at::kByte));
    l.trace_every_head = trace_head == kEveryHead;
    l.trace_head = l.trace_every_head ? -1 : trace_head, l.trace_query_block = trace_qb, l.trace_batch = trace_batch;
    l.trace_buffer = trace_buf->data_ptr();
  }
  gpu::launch_estimate_masks(l);
  return m;
}
#endif

}  // namespace

bool cuda_kernels_built() {
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

std::string cuda_kernels_status() {
#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
  return gpu::device_status();
#else
  return "this build has no CUDA kernels (nvcc was not found at configure time)";
#endif
}

#ifdef HIPSTUDIO_HAVE_CUDA_KERNELS
MaskTensors estimate_masks(const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p,
                           const at::Tensor& positions) {
  return run_masks(q, k, p, positions, -1, -1, 0, nullptr);
}

void estimate_masks_into(MaskTensors& out, const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p,
                         const at::Tensor& positions) {
  run_masks(q, k, p, positions, -1, -1, 0, nullptr, &out);
}

namespace {
// The masks and the traces of query block `query_block` of batch entry `batch`: head `head`'s, or
// every head's (head kEveryHead), in one launch.
std::pair<MaskTensors, std::vector<hip::MaskTrace>> masks_with_traces(const at::Tensor& q, const at::Tensor& k,
                                                                      const hip::HipParams& p, int64_t head,
                                                                      int64_t query_block, const at::Tensor& positions,
                                                                      int64_t batch) {
  at::Tensor buf;
  MaskTensors m = run_masks(q, k, p, positions, head, query_block, batch, &buf);
  const int64_t kb = hip::hip_kb(p);
  const auto each = static_cast<int64_t>(gpu::mask_trace_bytes(kb)), header = static_cast<int64_t>(gpu::mask_trace_header_bytes(kb));
  const at::Tensor per_trace = buf.view({-1, each});
  // Only the iterations the searches ran come to the host (a buffer has room for kMaxIter): the
  // headers first, then each trace's prefix up to the longest search's last iteration.
  const at::Tensor headers = per_trace.narrow(1, 0, header).to(at::kCPU).contiguous();
  int iterations = 0;
  for (int64_t i = 0; i < headers.size(0); ++i)
    iterations = std::max(iterations, gpu::mask_trace_iterations(headers[i].data_ptr<uint8_t>()));
  const auto used = static_cast<int64_t>(gpu::mask_trace_used_bytes(kb, iterations));
  const at::Tensor host = per_trace.narrow(1, 0, used).to(at::kCPU).contiguous();
  const uint8_t* data = host.data_ptr<uint8_t>();
  hip::AttentionInputs in;
  const at::Tensor hpos = positions.defined() ? positions.to(at::kCPU).contiguous() : positions;
  in.positions = hpos.defined() ? hpos.data_ptr<int64_t>() : nullptr;
  in.tq = q.size(-2), in.tk = k.size(-2);
  const hip::SearchRange sr = hip::search_range(in, p, query_block);
  // Every head's trace (a decode refresh's recording) is decoded on a few threads: this runs for
  // every layer of a recorded refresh step, and one thread took ~3 ms a layer at 32k tokens.
  std::vector<hip::MaskTrace> traces(static_cast<size_t>(host.size(0)));
  hip::parallel_for(host.size(0), hip::kFewThreads, [&](int64_t i, int) {
    traces[static_cast<size_t>(i)] =
        gpu::decode_mask_trace(data + i * used, static_cast<size_t>(used), kb, head == kEveryHead ? i : head, query_block,
                               sr.row_begin, sr.row_end, sr.p0, sr.lo, sr.hi, sr.dense_from);
  });
  return {std::move(m), std::move(traces)};
}
}  // namespace

std::pair<MaskTensors, hip::MaskTrace> estimate_masks_traced(const at::Tensor& q, const at::Tensor& k,
                                                             const hip::HipParams& p, int64_t head,
                                                             int64_t query_block, const at::Tensor& positions,
                                                             int64_t batch) {
  auto [m, traces] = masks_with_traces(q, k, p, head, query_block, positions, batch);
  return {std::move(m), std::move(traces.front())};
}

std::pair<MaskTensors, std::vector<hip::MaskTrace>> estimate_masks_traced_every_head(const at::Tensor& q,
                                                                                     const at::Tensor& k,
                                                                                     const hip::HipParams& p,
                                                                                     int64_t query_block,
                                                                                     const at::Tensor& positions,
                                                                                     int64_t batch) {
  return masks_with_traces(q, k, p, kEveryHead, query_block, positions, batch);
}

namespace {
// Q's device's split buffers, kept between calls (one per device: the binding launches on the
// default stream, which orders the calls sharing them). The done-counters must start at zero and
// every call leaves them zero, so their buffer is zero-filled once when it grows instead of
// memset per decode step; the partials need no init and are reused to spare the allocator.
struct SplitBuffers {
  at::Tensor partials, counters;
};
void* grown(at::Tensor& t, size_t bytes, const at::Tensor& q, bool zero) {
  if (!t.defined() || static_cast<size_t>(t.numel()) < bytes) {
    const at::TensorOptions o = q.options().dtype(at::kByte);
    t = zero ? at::zeros({static_cast<int64_t>(bytes)}, o) : at::empty({static_cast<int64_t>(bytes)}, o);
  }
  return t.data_ptr();
}
void use_split_buffers(const at::Tensor& q, gpu::AttentionLaunch& l, int splits) {
  static std::mutex mu;
  // Never destroyed: freeing CUDA tensors from a static destructor can run after LibTorch's
  // allocator is gone at exit.
  static auto* cache = new std::map<int, SplitBuffers>;
  std::lock_guard<std::mutex> lock(mu);
  SplitBuffers& b = (*cache)[q.device().index()];
  l.workspace = grown(b.partials, gpu::attention_workspace_bytes(l, splits), q, false);
  l.counters = grown(b.counters, gpu::attention_counter_bytes(l), q, true);
}
}  // namespace

namespace {
// The launch of sparse attention over these tensors, every argument checked; `pos` is on the
// device already (or undefined), `out` allocated. No workspace yet.
gpu::AttentionLaunch attention_launch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& blocks, const at::Tensor& counts, const hip::HipParams& p,
                                      const at::Tensor& pos, const at::Tensor& out, int num_splits) {
  const Shape qs = shape_of(q, "Q"), ks = shape_of(k, "K"), vs = shape_of(v, "V");
  check_pair(q, qs, k, ks, "K");
  check_pair(q, qs, v, vs, "V");
  if (vs.heads != ks.heads || vs.t != ks.t) fail("V " + shape_str(v) + " must have K's shape " + shape_str(k));
  const int64_t qbs = (qs.t + p.b_q - 1) / p.b_q, kb = p.k / std::max<int64_t>(p.b_k, 1);
  std::vector<int64_t> bshape, cshape;
  if (q.dim() == 4) bshape.push_back(qs.batch), cshape.push_back(qs.batch);
  bshape.insert(bshape.end(), {qs.heads, qbs, kb});
  cshape.insert(cshape.end(), {qs.heads, qbs});
  if (!blocks.defined() || blocks.scalar_type() != at::kInt || blocks.sizes().vec() != bshape || !blocks.is_contiguous() ||
      blocks.device() != q.device())
    fail("blocks must be contiguous int32 on Q's device with shape (batch?, hq, qbs, kb), got " +
         (blocks.defined() ? shape_str(blocks) : std::string("undefined")));
  if (!counts.defined() || counts.scalar_type() != at::kInt || counts.sizes().vec() != cshape || !counts.is_contiguous() ||
      counts.device() != q.device())
    fail("counts must be contiguous int32 on Q's device with shape (batch?, hq, qbs), got " +
         (counts.defined() ? shape_str(counts) : std::string("undefined")));
  if (!out.defined() || out.sizes() != q.sizes() || out.scalar_type() != q.scalar_type() || out.device() != q.device())
    fail("out " + (out.defined() ? shape_str(out) : std::string("undefined")) + " must have Q's shape, dtype and device");
  const Shape os = shape_of(out, "out");
  gpu::AttentionLaunch l;
  l.q = q.data_ptr(), l.k = k.data_ptr(), l.v = v.data_ptr(), l.out = out.data_ptr(), l.dtype = dtype_of(q);
  l.q_stride = qs.strides, l.k_stride = ks.strides, l.v_stride = vs.strides, l.out_stride = os.strides;
  l.positions = pos.defined() ? pos.data_ptr<int64_t>() : nullptr;
  l.batch = qs.batch, l.hq = qs.heads, l.hkv = ks.heads, l.tq = qs.t, l.tk = ks.t, l.d = qs.d, l.hip = p;
  l.blocks = blocks.data_ptr<int32_t>(), l.counts = counts.data_ptr<int32_t>();
  l.num_splits = num_splits;
  l.num_splits = gpu::attention_splits(l);
  return l;
}

// `into` has the decode rows' layout for `heads` rows of kb + tail_room blocks (decode_rows.h), on `device`.
void check_decode_rows(const DecodeRows& into, int64_t heads, int64_t kb, int64_t tail_room, const c10::Device& device,
                       const char* who) {
  auto check = [&](const at::Tensor& t, std::vector<int64_t> shape, const char* name) {
    if (!t.defined() || t.sizes().vec() != shape || t.scalar_type() != at::kInt || !t.is_contiguous() || t.device() != device)
      fail(std::string(who) + ": " + name + " must be contiguous int32 " + shape_str(at::empty(shape, at::kInt)) + " on " +
           device.str() + ", got " + (t.defined() ? shape_str(t) : "none"));
  };
  check(into.rows, {heads, 1, kb + tail_room}, "rows");
  check(into.counts_by_extra, {tail_room + 1, heads, 1}, "counts_by_extra");
}

// Device positions the kernel reads when it runs (a graph replay), so only their form is checked.
void check_device_positions(const at::Tensor& positions, const at::Tensor& q) {
  if (!positions.defined() || positions.dim() != 1 || positions.size(0) != q.size(-2) ||
      positions.scalar_type() != at::kLong || !positions.is_contiguous() || positions.device() != q.device())
    fail("positions must be contiguous int64 of shape (" + std::to_string(q.size(-2)) + ") on Q's device, got " +
         (positions.defined() ? shape_str(positions) : std::string("undefined")));
}
}  // namespace

at::Tensor sparse_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& blocks,
                            const at::Tensor& counts, const hip::HipParams& p, const at::Tensor& positions,
                            int num_splits, const at::Tensor& out_given, const hip::ScoreTransform& score) {
  require_ready();
  c10::DeviceGuard guard(q.device());
  const at::Tensor pos = device_positions(positions, q.size(-2), k.size(-2), q.device());
  const at::Tensor out = out_given.defined() ? out_given : at::empty(q.sizes(), q.options());
  gpu::AttentionLaunch l = attention_launch(q, k, v, blocks, counts, p, pos, out, num_splits);
  l.score = score;
  if (l.num_splits > 1) use_split_buffers(q, l, l.num_splits);
  gpu::sparse_attention(l);
  return out;
}

namespace {
// The launch of sparse_attention_batch over these tensors, every argument checked, `out` allocated:
// the per-sequence fields read on the device, one K/V the batch shares where key_starts is given.
// No workspace yet.
gpu::AttentionLaunch batch_attention_launch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                            const at::Tensor& blocks, const at::Tensor& counts, const hip::HipParams& p,
                                            const at::Tensor& key_counts, const at::Tensor& key_starts, int num_splits,
                                            const at::Tensor& out, const hip::ScoreTransform& score) {
  if (q.dim() != 4) fail("sparse_attention_batch takes a batched (batch, hq, tq, d) Q, got " + shape_str(q));
  auto check_per_sequence = [&](const at::Tensor& t, const char* name) {
    if (!t.defined() || t.dim() != 1 || t.size(0) != q.size(0) || t.scalar_type() != at::kInt || !t.is_contiguous() ||
        t.device() != q.device())
      fail(std::string(name) + " must be contiguous int32 of shape (" + std::to_string(q.size(0)) + ") on Q's device, got " +
           (t.defined() ? shape_str(t) : std::string("undefined")));
  };
  check_per_sequence(key_counts, "key_counts");
  if (key_starts.defined()) {
    check_per_sequence(key_starts, "key_starts");
    if (k.dim() != 3 || v.dim() != 3)
      fail("with key_starts, K and V are the batch's one (hkv, rows, d) tensor each, got " + shape_str(k));
  }
  // One K/V shared by the batch: a batch dimension of stride 0 (the kernel reads key_starts instead).
  auto batched = [&](const at::Tensor& kv) {
    return key_starts.defined() ? kv.unsqueeze(0).expand({q.size(0), kv.size(0), kv.size(1), kv.size(2)}) : kv;
  };
  gpu::AttentionLaunch l = attention_launch(q, batched(k), batched(v), blocks, counts, p, at::Tensor(), out, num_splits);
  l.key_counts = key_counts.data_ptr<int32_t>();
  l.key_starts = key_starts.defined() ? key_starts.data_ptr<int32_t>() : nullptr;
  l.score = score;
  return l;
}
}  // namespace

at::Tensor sparse_attention_batch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& blocks,
                                  const at::Tensor& counts, const hip::HipParams& p, const at::Tensor& key_counts,
                                  const at::Tensor& key_starts, int num_splits, const at::Tensor& out_given,
                                  const hip::ScoreTransform& score) {
  require_ready();
  c10::DeviceGuard guard(q.device());
  const at::Tensor out = out_given.defined() ? out_given : at::empty(q.sizes(), q.options());
  gpu::AttentionLaunch l = batch_attention_launch(q, k, v, blocks, counts, p, key_counts, key_starts, num_splits, out, score);
  if (l.num_splits > 1) use_split_buffers(q, l, l.num_splits);
  gpu::sparse_attention(l);
  return out;
}

at::Tensor sparse_attention_batch_workspace(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                            const at::Tensor& blocks, const at::Tensor& counts, const hip::HipParams& p,
                                            const at::Tensor& key_counts, const at::Tensor& key_starts,
                                            const at::Tensor& out) {
  require_ready();
  c10::DeviceGuard guard(q.device());
  const gpu::AttentionLaunch l = batch_attention_launch(q, k, v, blocks, counts, p, key_counts, key_starts, 0, out, {});
  const size_t bytes = gpu::attention_workspace_bytes(l, l.num_splits);
  return bytes == 0 ? at::Tensor() : at::zeros({static_cast<int64_t>(bytes)}, q.options().dtype(at::kByte));
}

void sparse_attention_batch_on_stream(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& blocks, const at::Tensor& counts, const hip::HipParams& p,
                                      const at::Tensor& key_counts, const at::Tensor& key_starts, const at::Tensor& out,
                                      const at::Tensor& workspace, void* stream, const hip::ScoreTransform& score) {
  require_ready();
  c10::DeviceGuard guard(q.device());
  gpu::AttentionLaunch l = batch_attention_launch(q, k, v, blocks, counts, p, key_counts, key_starts, 0, out, score);
  const size_t bytes = gpu::attention_workspace_bytes(l, l.num_splits);
  if (bytes > 0) {
    if (!workspace.defined() || static_cast<size_t>(workspace.numel()) * workspace.element_size() < bytes ||
        workspace.device() != q.device() || !workspace.is_contiguous())
      fail("this batched launch splits its keys and needs a workspace of " + std::to_string(bytes) +
           " bytes on Q's device from sparse_attention_batch_workspace()");
    l.workspace = workspace.data_ptr();  // its counters follow the partials (l.counters null)
  }
  l.stream = stream;
  gpu::sparse_attention(l);
}

at::Tensor sparse_attention_workspace(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& blocks, const at::Tensor& counts, const hip::HipParams& p,
                                      const at::Tensor& positions, const at::Tensor& out) {
  require_ready();
  check_device_positions(positions, q);
  c10::DeviceGuard guard(q.device());
  const gpu::AttentionLaunch l = attention_launch(q, k, v, blocks, counts, p, positions, out, 0);
  const size_t bytes = gpu::attention_workspace_bytes(l, l.num_splits);
  return bytes == 0 ? at::Tensor() : at::zeros({static_cast<int64_t>(bytes)}, q.options().dtype(at::kByte));
}

void sparse_attention_on_stream(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& blocks,
                                const at::Tensor& counts, const hip::HipParams& p, const at::Tensor& positions,
                                const at::Tensor& out, const at::Tensor& workspace, void* stream,
                                bool mask_before_prior_kernel) {
  require_ready();
  check_device_positions(positions, q);
  c10::DeviceGuard guard(q.device());
  gpu::AttentionLaunch l = attention_launch(q, k, v, blocks, counts, p, positions, out, 0);
  const size_t bytes = gpu::attention_workspace_bytes(l, l.num_splits);
  if (bytes > 0) {
    if (!workspace.defined() || static_cast<size_t>(workspace.numel()) * workspace.element_size() < bytes ||
        workspace.device() != q.device() || !workspace.is_contiguous())
      fail("this launch splits its keys and needs a workspace of " + std::to_string(bytes) +
           " bytes on Q's device from sparse_attention_workspace()");
    l.workspace = workspace.data_ptr();  // its counters follow the partials (l.counters null)
  }
  l.stream = stream;
  l.mask_before_prior_kernel = mask_before_prior_kernel;
  gpu::sparse_attention(l);
}

void decode_rows_into(DecodeRows& into, const MaskTensors& mask, int64_t tail_start, int64_t tail_room, void* stream) {
  const at::Tensor& b = mask.blocks;
  const at::Tensor& c = mask.counts;
  if (!b.defined() || b.dim() != 3 || b.size(1) != 1 || b.scalar_type() != at::kInt || !b.is_contiguous() || !b.is_cuda())
    fail("decode_rows takes contiguous int32 CUDA blocks (hq, 1, kb), got " + (b.defined() ? shape_str(b) : "none"));
  if (!c.defined() || c.sizes() != at::IntArrayRef({b.size(0), 1}) || c.scalar_type() != at::kInt || !c.is_contiguous() ||
      c.device() != b.device())
    fail("decode_rows takes contiguous int32 counts (hq, 1) on the blocks' device, got " + (c.defined() ? shape_str(c) : "none"));
  const int64_t heads = b.size(0), kb = b.size(2);
  check_decode_rows(into, heads, kb, tail_room, b.device(), "decode_rows");
  c10::DeviceGuard guard(b.device());
  gpu::DecodeRowsLaunch l;
  l.blocks = b.data_ptr<int32_t>(), l.counts = c.data_ptr<int32_t>();
  l.heads = heads, l.kb = kb, l.tail_room = tail_room, l.tail_start = tail_start;
  l.rows = into.rows.data_ptr<int32_t>(), l.counts_by_extra = into.counts_by_extra.data_ptr<int32_t>();
  l.stream = stream;
  gpu::build_decode_rows(l);
}

namespace {
// A decode graph's refresh over q (hq, 1, d) and the whole cache k (hkv, capacity, d).
gpu::MaskLaunch graph_refresh_launch(const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p) {
  const Shape qs = shape_of(q, "Q"), ks = shape_of(k, "K");
  check_pair(q, qs, k, ks, "K");
  if (q.dim() != 3 || qs.t != 1) fail("a refresh inside a decode graph takes one query (hq, 1, d), got Q " + shape_str(q));
  return mask_inputs(q, qs, k, ks, p);
}
}  // namespace

bool refresh_in_decode_graph_supported(const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p) {
  if (!gpu::device_status().empty()) return false;
  c10::DeviceGuard guard(q.device());
  return gpu::mask_in_decode_graph_supported(graph_refresh_launch(q, k, p));
}

void refresh_decode_rows_on_stream(const at::Tensor& q, const at::Tensor& k, const hip::HipParams& p,
                                   const at::Tensor& position, DecodeRows& into, int64_t tail_room, void* stream,
                                   bool after_prior) {
  require_ready();
  check_device_positions(position, q);
  c10::DeviceGuard guard(q.device());
  gpu::MaskLaunch l = graph_refresh_launch(q, k, p);
  check_decode_rows(into, l.hq, hip::hip_kb(p), tail_room, q.device(), "refresh rows");
  l.device_position = position.data_ptr<int64_t>();
  l.decode_rows = into.rows.data_ptr<int32_t>(), l.counts_by_extra = into.counts_by_extra.data_ptr<int32_t>();
  l.tail_room = tail_room;
  l.stream = stream;
  l.after_prior = after_prior;
  gpu::launch_estimate_masks(l);
}

DecodeRows decode_rows(const MaskTensors& mask, int64_t tail_start, int64_t tail_room) {
  if (!mask.blocks.defined() || mask.blocks.dim() != 3)
    fail("decode_rows takes contiguous int32 CUDA blocks (hq, 1, kb), got " + (mask.blocks.defined() ? shape_str(mask.blocks) : "none"));
  const int64_t heads = mask.blocks.size(0), kb = mask.blocks.size(2);
  DecodeRows r;
  r.rows = at::empty({heads, 1, kb + tail_room}, mask.blocks.options());
  r.counts_by_extra = at::empty({tail_room + 1, heads, 1}, mask.blocks.options());
  decode_rows_into(r, mask, tail_start, tail_room, nullptr);  // the legacy default stream, as the mask and attention launches
  return r;
}
#else
DecodeRows decode_rows(const MaskTensors&, int64_t, int64_t) { throw std::runtime_error(cuda_kernels_status()); }
void decode_rows_into(DecodeRows&, const MaskTensors&, int64_t, int64_t, void*) {
  throw std::runtime_error(cuda_kernels_status());
}
bool refresh_in_decode_graph_supported(const at::Tensor&, const at::Tensor&, const hip::HipParams&) { return false; }
void refresh_decode_rows_on_stream(const at::Tensor&, const at::Tensor&, const hip::HipParams&, const at::Tensor&,
                                   DecodeRows&, int64_t, void*, bool) {
  throw std::runtime_error(cuda_kernels_status());
}
at::Tensor sparse_attention_workspace(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                      const at::Tensor&, const hip::HipParams&, const at::Tensor&, const at::Tensor&) {
  throw std::runtime_error(cuda_kernels_status());
}
void sparse_attention_on_stream(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                const at::Tensor&, const hip::HipParams&, const at::Tensor&, const at::Tensor&,
                                const at::Tensor&, void*, bool) {
  throw std::runtime_error(cuda_kernels_status());
}
MaskTensors estimate_masks(const at::Tensor&, const at::Tensor&, const hip::HipParams&, const at::Tensor&) {
  throw std::runtime_error(cuda_kernels_status());
}
void estimate_masks_into(MaskTensors&, const at::Tensor&, const at::Tensor&, const hip::HipParams&, const at::Tensor&) {
  throw std::runtime_error(cuda_kernels_status());
}
std::pair<MaskTensors, hip::MaskTrace> estimate_masks_traced(const at::Tensor&, const at::Tensor&,
                                                             const hip::HipParams&, int64_t, int64_t,
                                                             const at::Tensor&, int64_t) {
  throw std::runtime_error(cuda_kernels_status());
}
std::pair<MaskTensors, std::vector<hip::MaskTrace>> estimate_masks_traced_every_head(const at::Tensor&,
                                                                                     const at::Tensor&,
                                                                                     const hip::HipParams&, int64_t,
                                                                                     const at::Tensor&, int64_t) {
  throw std::runtime_error(cuda_kernels_status());
}
at::Tensor sparse_attention(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const hip::HipParams&, const at::Tensor&, int, const at::Tensor&,
                            const hip::ScoreTransform&) {
  throw std::runtime_error(cuda_kernels_status());
}
at::Tensor sparse_attention_batch(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                  const at::Tensor&, const hip::HipParams&, const at::Tensor&, const at::Tensor&, int,
                                  const at::Tensor&, const hip::ScoreTransform&) {
  throw std::runtime_error(cuda_kernels_status());
}
at::Tensor sparse_attention_batch_workspace(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                            const at::Tensor&, const hip::HipParams&, const at::Tensor&, const at::Tensor&,
                                            const at::Tensor&) {
  throw std::runtime_error(cuda_kernels_status());
}
void sparse_attention_batch_on_stream(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                      const at::Tensor&, const hip::HipParams&, const at::Tensor&, const at::Tensor&,
                                      const at::Tensor&, const at::Tensor&, void*, const hip::ScoreTransform&) {
  throw std::runtime_error(cuda_kernels_status());
}
#endif

hip::MaskResult to_mask_result(const MaskTensors& m, const hip::HipParams& p, int64_t tq, int64_t tk,
                               const at::Tensor& positions) {
  if (m.blocks.dim() != 3) fail("to_mask_result takes a 3-D (unbatched) mask, got " + shape_str(m.blocks));
  hip::MaskResult r;
  r.heads = m.blocks.size(0), r.query_blocks = m.blocks.size(1), r.kb = m.blocks.size(2);
  const at::Tensor b = m.blocks.to(at::kCPU).contiguous(), c = m.counts.to(at::kCPU).contiguous();
  r.blocks.assign(b.data_ptr<int32_t>(), b.data_ptr<int32_t>() + b.numel());
  r.counts.assign(c.data_ptr<int32_t>(), c.data_ptr<int32_t>() + c.numel());
  if (m.iterations.defined()) {
    const at::Tensor it = m.iterations.to(at::kCPU).contiguous(), br = m.branches.to(at::kCPU).contiguous();
    r.iterations.assign(it.data_ptr<int32_t>(), it.data_ptr<int32_t>() + it.numel());
    r.branches.assign(br.data_ptr<int64_t>(), br.data_ptr<int64_t>() + br.numel());
  }
  hip::AttentionInputs in;
  const at::Tensor hpos = positions.defined() ? positions.to(at::kCPU).contiguous() : positions;
  in.positions = hpos.defined() ? hpos.data_ptr<int64_t>() : nullptr;
  in.tq = tq, in.tk = tk;
  r.dense_from.resize(static_cast<size_t>(r.query_blocks));
  for (int64_t qb = 0; qb < r.query_blocks; ++qb) r.dense_from[qb] = hip::search_range(in, p, qb).dense_from;
  return r;
}

const char* dense_backend_name(DenseBackend b) {
  switch (b) {
    case DenseBackend::kAuto: return "auto";
    case DenseBackend::kFlash: return "flash";
    case DenseBackend::kCuDNN: return "cudnn";
    case DenseBackend::kEfficient: return "efficient";
    case DenseBackend::kMath: return "math";
  }
  return "?";
}

bool dense_attention_supported() {
#ifdef HIPSTUDIO_TORCH_SDPA
  return true;
#else
  return false;
#endif
}

at::Tensor expand_kv_heads(const at::Tensor& kv, int64_t hq) {
  if (kv.dim() != 4) fail("expand_kv_heads takes (batch, hkv, t, d), got " + shape_str(kv));
  const int64_t hkv = kv.size(1);
  if (hq % hkv != 0) fail("query heads must be a multiple of KV heads");
  if (hq == hkv) return kv;
  return kv.repeat_interleave(hq / hkv, 1).contiguous();
}

#ifdef HIPSTUDIO_TORCH_SDPA
namespace {
// Forces one SDPA backend for its lifetime and restores the previous choice.
class BackendScope {
 public:
  explicit BackendScope(DenseBackend b) {
    auto& c = at::globalContext();
    flash_ = c.userEnabledFlashSDP(), eff_ = c.userEnabledMemEfficientSDP(), math_ = c.userEnabledMathSDP();
    cudnn_ = c.userEnabledCuDNNSDP();
    if (b == DenseBackend::kAuto) return;
    c.setSDPUseFlash(b == DenseBackend::kFlash);
    c.setSDPUseMemEfficient(b == DenseBackend::kEfficient);
    c.setSDPUseMath(b == DenseBackend::kMath);
    c.setSDPUseCuDNN(b == DenseBackend::kCuDNN);
  }
  ~BackendScope() {
    auto& c = at::globalContext();
    c.setSDPUseFlash(flash_), c.setSDPUseMemEfficient(eff_), c.setSDPUseMath(math_), c.setSDPUseCuDNN(cudnn_);
  }

 private:
  bool flash_, eff_, math_, cudnn_;
};
}  // namespace

at::Tensor dense_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                           DenseBackend backend) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || k.size(1) != q.size(1))
    fail("dense_attention takes (batch, heads, t, d) with K/V heads expanded to Q's, got Q " + shape_str(q) + ", K " +
         shape_str(k));
  BackendScope scope(backend);
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
}

at::Tensor dense_decode(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, DenseBackend backend) {
  if (q.dim() != 4 || k.dim() != 4 || q.size(1) % k.size(1) != 0)
    fail("dense_decode takes Q (batch, hq, tq, d), K/V (batch, hkv, tk, d), got Q " + shape_str(q) + ", K " + shape_str(k));
  const int64_t b = q.size(0), hq = q.size(1), tq = q.size(2), d = q.size(3), hkv = k.size(1);
  const at::Tensor qf = q.contiguous().view({b, hkv, (hq / hkv) * tq, d});  // the group's heads as rows
  BackendScope scope(backend);
  return at::scaled_dot_product_attention(qf, k, v, {}, 0.0, false).reshape({b, hq, tq, d});
}
#else
at::Tensor dense_attention(const at::Tensor&, const at::Tensor&, const at::Tensor&, bool, DenseBackend) {
  throw std::runtime_error("the dense baseline needs LibTorch >= 2 (scaled_dot_product_attention); this is " +
                           std::string("an older LibTorch"));
}
at::Tensor dense_decode(const at::Tensor&, const at::Tensor&, const at::Tensor&, DenseBackend) {
  throw std::runtime_error("the dense baseline needs LibTorch >= 2 (scaled_dot_product_attention)");
}
#endif

}  // namespace hipstudio::hip_torch
