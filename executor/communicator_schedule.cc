#include "executor/communicator_schedule.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "program_ir/error.h"

namespace ctp {
namespace {

const std::set<std::string, std::less<>>& collective_types() {
  static const std::set<std::string, std::less<>> types = {
      "c_allreduce_sum", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod",
      "c_allreduce_xsum", "c_broadcast", "c_allgather", "c_reducescatter", "c_reduce_sum",
      "c_reduce_max", "c_reduce_min", "c_reduce_prod", "allreduce", "broadcast", "all_gather"};
  return types;
}

int64_t int_attr_or(const Op& op, std::string_view name, int64_t fallback) {
  const Attribute* a = op.attr(name);
  if (!a) return fallback;
  try {
    return a->as_int64();
  } catch (const Error&) {
    return fallback;
  }
}

// Ring set-up ops and the attribute holding their rank count (the rank
// itself differs from rank to rank by design).
const std::map<std::string, std::string, std::less<>>& setup_types() {
  static const std::map<std::string, std::string, std::less<>> types = {
      {"c_gen_nccl_id", ""},  // its endpoints: other_endpoints + 1
      {"c_comm_init", "nranks"},
      {"c_comm_init_multitrainer", "ntrainers"},
      {"c_comm_init_all", ""},
      {"comm_init_all", ""}};
  return types;
}

CollectiveCall setup_call(const Op& op, const std::string& ranks_attr) {
  CollectiveCall c;
  c.op_type = op.type;
  c.ring_id = static_cast<int>(int_attr_or(op, "ring_id", 0));
  c.numel = 0;
  if (op.type == "c_gen_nccl_id") {
    const Attribute* others = op.attr("other_endpoints");
    c.nranks = 1;
    if (const auto* list = others ? std::get_if<std::vector<std::string>>(&others->value()) : nullptr)
      c.nranks += static_cast<int>(list->size());
    if (const std::vector<std::string>* out = op.output("Out"); out && !out->empty())
      c.var = out->front();
  } else {
    c.nranks = ranks_attr.empty() ? 0 : static_cast<int>(int_attr_or(op, ranks_attr, -1));
    if (const std::vector<std::string>* x = op.input("X"); x && !x->empty()) c.var = x->front();
  }
  return c;
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_str(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool done() const { return pos_ == b_.size(); }
  uint64_t u64() {
    if (b_.size() - pos_ < 8) throw Error("schedule exchange: truncated record");
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(b_[pos_++]);
    return v;
  }
  std::string str() {
    uint64_t n = u64();
    if (b_.size() - pos_ < n) throw Error("schedule exchange: truncated record");
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  std::string_view b_;
  std::size_t pos_ = 0;
};

std::string encode(const CollectiveSchedule& schedule) {
  std::string out;
  for (const CollectiveCall& c : schedule) {
    put_str(out, c.op_type);
    put_str(out, c.var);
    put_u64(out, static_cast<uint64_t>(static_cast<int64_t>(c.ring_id)));
    put_u64(out, static_cast<uint64_t>(c.dtype));
    put_u64(out, static_cast<uint64_t>(c.numel));
    put_u64(out, static_cast<uint64_t>(static_cast<int64_t>(c.root)));
    put_u64(out, static_cast<uint64_t>(c.tensors));
    put_u64(out, static_cast<uint64_t>(static_cast<int64_t>(c.nranks)));
  }
  return out;
}

CollectiveSchedule decode(std::string_view bytes) {
  CollectiveSchedule out;
  Reader r(bytes);
  while (!r.done()) {
    CollectiveCall c;
    c.op_type = r.str();
    c.var = r.str();
    c.ring_id = static_cast<int>(static_cast<int64_t>(r.u64()));
    c.dtype = static_cast<DataType>(r.u64());
    c.numel = static_cast<int64_t>(r.u64());
    c.root = static_cast<int>(static_cast<int64_t>(r.u64()));
    c.tensors = static_cast<int>(r.u64());
    c.nranks = static_cast<int>(static_cast<int64_t>(r.u64()));
    out.push_back(std::move(c));
  }
  return out;
}

// Every part of a call must agree, the var too: two same-sized broadcasts
// (or all-reduces) in swapped order would silently exchange the wrong vars.
bool same_call(const CollectiveCall& a, const CollectiveCall& b) { return a == b; }

Tensor gather_bytes(Communicator& comm, const std::string& mine, int64_t width) {
  Tensor in(DataType::UINT8, {width});
  std::memcpy(in.raw_data(), mine.data(), mine.size());
  Tensor out(DataType::UINT8, {width * comm.size()});
  comm.all_gather(in, out);
  return out;
}

}  // namespace

bool communicates(const Op& op) {
  return collective_types().count(op.type) || setup_types().count(op.type);
}

CollectiveSchedule collective_schedule(const Block& block, std::size_t first_op) {
  CollectiveSchedule out;
  std::size_t index = 0;
  for (const Op& op : block.ops()) {
    if (index++ < first_op) continue;
    if (auto setup = setup_types().find(op.type); setup != setup_types().end()) {
      out.push_back(setup_call(op, setup->second));
      continue;
    }
    if (!collective_types().count(op.type)) continue;
    CollectiveCall c;
    c.op_type = op.type;
    c.ring_id = static_cast<int>(int_attr_or(op, "ring_id", 0));
    if (op.type == "c_broadcast" || op.type == "broadcast") c.root = static_cast<int>(int_attr_or(op, "root", 0));
    const std::vector<std::string>* xs = op.input("X");
    if (!xs) xs = op.input("x");  // Paddle 3's broadcast and all_gather
    if (!xs || xs->empty()) {
      c.numel = 0;
    } else {
      c.var = xs->front();
      c.tensors = static_cast<int>(xs->size());
      int64_t total = 0;
      for (const std::string& name : *xs) {
        const Var* v = block.find_var(name);
        if (!v) {
          total = -1;
          break;
        }
        c.dtype = v->dtype;
        int64_t n = v->numel();
        if (n < 0 || total < 0) total = -1;
        else total += n;
      }
      c.numel = total;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string to_string(const CollectiveCall& c) {
  if (c.nranks >= 0) {  // a ring set-up op
    std::string s = c.op_type;
    if (c.op_type != "c_gen_nccl_id") s += " ring " + std::to_string(c.ring_id);
    if (c.nranks > 0) s += " nranks " + std::to_string(c.nranks);
    if (!c.var.empty()) s += (c.op_type == "c_gen_nccl_id" ? " Out='" : " X='") + c.var + "'";
    return s;
  }
  std::string s = c.op_type + " ring " + std::to_string(c.ring_id) + " " +
                  std::string(ctp::to_string(c.dtype)) + "[" +
                  (c.numel < 0 ? std::string("?") : std::to_string(c.numel)) + "]";
  if (c.tensors > 1) s += " (" + std::to_string(c.tensors) + " tensors fused)";
  if (c.root >= 0) s += " root " + std::to_string(c.root);
  if (!c.var.empty()) s += " X='" + c.var + "'";
  return s;
}

uint64_t fingerprint(const CollectiveSchedule& schedule) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(schedule.size());
  for (const CollectiveCall& c : schedule) {
    for (char ch : c.op_type) mix(static_cast<unsigned char>(ch));
    mix(c.op_type.size());
    for (char ch : c.var) mix(static_cast<unsigned char>(ch));
    mix(c.var.size());
    mix(static_cast<uint64_t>(c.nranks));
    mix(static_cast<uint64_t>(c.ring_id));
    mix(static_cast<uint64_t>(c.dtype));
    mix(static_cast<uint64_t>(c.numel));
    mix(static_cast<uint64_t>(c.root));
    mix(static_cast<uint64_t>(c.tensors));
  }
  return h;
}

void verify_schedule_agreement(CommunicatorManager& comms, const CollectiveSchedule& schedule) {
  uint64_t mine = fingerprint(schedule);
  for (int ring_id : comms.ring_ids()) {
    Communicator& comm = comms.get(ring_id);
    if (comm.size() == 1) continue;
    Tensor fp(DataType::INT64, {1});
    fp.data<int64_t>()[0] = static_cast<int64_t>(mine);
    Tensor all(DataType::INT64, {comm.size()});
    comm.all_gather(fp, all);
    const int64_t* fps = all.data<int64_t>();
    if (std::all_of(fps, fps + comm.size(), [&](int64_t f) { return f == fps[0]; })) continue;

    // They differ: exchange the schedules themselves (lengths first).
    std::string bytes = encode(schedule);
    Tensor len(DataType::INT64, {1});
    len.data<int64_t>()[0] = static_cast<int64_t>(bytes.size());
    Tensor lens(DataType::INT64, {comm.size()});
    comm.all_gather(len, lens);
    int64_t width = std::max<int64_t>(1, *std::max_element(lens.data<int64_t>(), lens.data<int64_t>() + comm.size()));
    Tensor gathered = gather_bytes(comm, bytes, width);
    std::vector<CollectiveSchedule> schedules;
    for (int r = 0; r < comm.size(); ++r)
      schedules.push_back(decode(std::string_view(static_cast<const char*>(gathered.raw_data()) + r * width,
                                                  static_cast<std::size_t>(lens.data<int64_t>()[r]))));
    std::string message =
        "the ranks would run different collectives (they would hang or mix buffers); ";
    const CollectiveSchedule& base = schedules[0];
    bool differs = false;
    for (int r = 1; r < comm.size(); ++r) {
      const CollectiveSchedule& other = schedules[r];
      std::size_t i = 0;
      while (i < base.size() && i < other.size() && same_call(base[i], other[i])) ++i;
      if (i == base.size() && i == other.size()) continue;
      differs = true;
      auto side = [&](int rank, const CollectiveSchedule& s) {
        return "rank " + std::to_string(rank) + " runs " +
               (i < s.size() ? to_string(s[i]) : std::string("nothing (its schedule ends)"));
      };
      message += "first difference between rank 0 and rank " + std::to_string(r) + " at collective #" +
                 std::to_string(i) + ": " + side(0, base) + ", " + side(r, other) + "; ";
    }
    if (!differs) continue;  // fingerprints collided: the schedules agree
    message.resize(message.size() - 2);
    throw Error(comm.place("schedule check"), message);
  }
}

}  // namespace ctp
