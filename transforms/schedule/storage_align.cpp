// storage_align(block, buffer_index, axis, factor, offset): TVM Schedule.storage_align.
// Asks that the stride of dimension `axis` of the buffer the block writes at `buffer_index`
// be `factor * k + offset` (padding rows against shared-memory bank conflicts). A layout
// hint only: it never changes what is computed. Recorded as TVM records it, in the block
// annotation "buffer_dim_align" (a list of [buffer_index, axis, factor, offset]); the
// backends keep dense row-major layouts and do not pad (docs/schedule.md).
#include <array>
#include <cctype>

#include "transforms/schedule/prims.h"

namespace tirc::sched {

void prim_storage_align(ScheduleState& st, const ScheduleInstr& ins) {
  expect_args(ins, 5, 5);
  expect_results(ins, 0);
  Stmt bs = arg_block(st, ins, 0);
  const BlockNode* b = block_of(bs);
  int64_t idx = arg_int(ins, 1, "the buffer index");
  int64_t axis = arg_int(ins, 2, "the axis");
  int64_t factor = arg_int(ins, 3, "the factor");
  int64_t offset = arg_int(ins, 4, "the offset");
  if (idx < 0 || idx >= static_cast<int64_t>(b->writes.size()))
    refuse("block " + b->name + " has " + std::to_string(b->writes.size()) + " write region" +
           (b->writes.size() == 1 ? "" : "s") + "; index " + std::to_string(idx) + " is out of range");
  const Buffer& buf = b->writes[static_cast<size_t>(idx)].buffer;
  int64_t nd = static_cast<int64_t>(buf->ndim());
  if (axis < -nd || axis >= nd)
    refuse("axis " + std::to_string(axis) + " is out of range for buffer " + buf->name + " (" +
           std::to_string(nd) + " dimension" + (nd == 1 ? "" : "s") + ")");
  if (axis < 0) axis += nd;
  // As TVM: the strides of a parameter are the caller's; only allocated buffers can be padded.
  if (st.is_param(buf))
    refuse("buffer " + buf->name + " is a parameter of function " + st.func.name +
           " (only buffers the function allocates have a layout to align)");
  if (factor <= 0) refuse("factor " + std::to_string(factor) + " is not positive");
  if (offset < 0 || offset >= factor) refuse("offset " + std::to_string(offset) + " is not in [0, factor)");
  std::string entry = "[" + std::to_string(idx) + ", " + std::to_string(axis) + ", " +
                      std::to_string(factor) + ", " + std::to_string(offset) + "]";
  // The entries already there ("[[i, axis, factor, offset], ...]"); one for the same buffer
  // and axis is replaced (TVM: a second storage_align of a dimension updates it). Anything
  // else under that key is not ours to extend (TVM refuses such an annotation too).
  std::vector<std::array<int64_t, 4>> entries;
  if (auto it = b->annotations.find("buffer_dim_align"); it != b->annotations.end()) {
    const std::string& t = it->second;
    bool ok = t.size() >= 4 && t.front() == '"' && t.back() == '"';
    std::string body = ok ? t.substr(1, t.size() - 2) : "";
    std::vector<int64_t> nums;
    for (size_t k = 0; ok && k < body.size();) {
      char c = body[k];
      if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
        size_t used = 0;
        nums.push_back(std::stoll(body.substr(k), &used));
        k += used;
      } else {
        ok = c == '[' || c == ']' || c == ',' || c == ' ';
        ++k;
      }
    }
    if (!ok || nums.size() % 4 != 0)
      refuse("block " + b->name + " has an annotation buffer_dim_align (" + t +
             ") that is not a list of storage_align entries");
    for (size_t k = 0; k < nums.size(); k += 4)
      if (!(nums[k] == idx && nums[k + 1] == axis))
        entries.push_back({nums[k], nums[k + 1], nums[k + 2], nums[k + 3]});
  }
  std::string list = "[";
  for (auto& e : entries)
    list += "[" + std::to_string(e[0]) + ", " + std::to_string(e[1]) + ", " + std::to_string(e[2]) + ", " +
            std::to_string(e[3]) + "], ";
  list += entry + "]";
  st.replace(bs.get(), update_realize(bs, [&](BlockRealizeNode& r) {
               r.block = update_block(
                   r.block, [&](BlockNode& n) { n.annotations["buffer_dim_align"] = "\"" + list + "\""; });
             }));
}

}  // namespace tirc::sched
