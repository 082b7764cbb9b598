// Ops that create, move and reshape tensors: initializers, feed/fetch,
// assign, cast, split, concat and coalesce_tensor.
#include <cstdint>

#include "ops/schema/defs_common.h"

namespace ctp::defs {
namespace {

constexpr int32_t kFP32 = static_cast<int32_t>(DataType::FP32);
// Where use_align is set and align_size is not, chunks start on 256-byte
// boundaries (Paddle's GPU allocator granularity, which ctp uses everywhere).
constexpr int64_t kDefaultAlignBytes = 256;

// The shape an initializer writes, as Paddle infers it before run time: a
// ShapeTensorList gives the rank (dims unknown); a ShapeTensor gives the rank
// through its element count unless the `shape` attribute is set; otherwise
// the `shape` attribute. nullopt when not even the rank is known yet.
std::optional<Shape> initializer_shape(const InferContext& ctx) {
  if (ctx.has_input("ShapeTensorList"))
    return Shape(ctx.input_count("ShapeTensorList"), -1);
  Shape shape = ctx.ints_attr("shape");
  for (int64_t d : shape)
    if (d < -1) ctx.fail("attribute 'shape' " + shape_to_string(shape) + " has a negative dim");
  if (ctx.has_input("ShapeTensor") && shape.empty()) {
    const int64_t rank = ctx.input("ShapeTensor").numel();
    if (rank < 0) return std::nullopt;
    return Shape(static_cast<std::size_t>(rank), -1);
  }
  return shape;
}

void infer_initializer(InferContext& ctx) {
  const DataType dtype = ctx.dtype_attr("dtype");
  if (auto shape = initializer_shape(ctx)) {
    ctx.set_output("Out", *shape, dtype);
  } else {
    ctx.set_output_dtype("Out", dtype);  // the declared shape is all there is
  }
}

// The attributes Paddle gives all three initializers; shape was INTS before 2.0.
std::vector<AttrDef> initializer_attrs(std::vector<AttrDef> own) {
  std::vector<AttrDef> attrs = {
      attr("shape", longs({}), {AttrType::INTS}),
      attr("dtype", Attribute(kFP32)),
  };
  attrs.insert(attrs.end(), own.begin(), own.end());
  return attrs;
}

void infer_split(InferContext& ctx) {
  const Var& x = ctx.input("X");
  const std::size_t outs = ctx.output_count("Out");
  Shape out = x.shape;
  if (ctx.has_input("AxisTensor")) {
    // The axis is known only at run time, so no dim is.
    for (std::size_t i = 0; i < outs; ++i) ctx.set_output("Out", i, Shape(out.size(), -1), x.dtype);
    return;
  }
  const std::size_t axis = normalize_axis(ctx, ctx.int_attr("axis"), x.shape.size(), "axis");
  const int64_t dim = x.shape[axis];
  const int64_t num = ctx.int_attr("num");
  Shape sections = ctx.ints_attr("sections");
  if (num > 0) {
    if (static_cast<int64_t>(outs) != num)
      ctx.fail("num is " + std::to_string(num) + " but output Out has " + std::to_string(outs) +
               " vars");
    if (dim >= 0 && dim % num != 0)
      ctx.fail(ctx.describe_input("X") + " has dim " + std::to_string(dim) + " on axis " +
               std::to_string(axis) + ", not divisible by num " + std::to_string(num));
    out[axis] = dim < 0 ? -1 : dim / num;
    for (std::size_t i = 0; i < outs; ++i) ctx.set_output("Out", i, out, x.dtype);
    return;
  }
  if (ctx.has_input("SectionsTensorList")) {
    for (std::size_t i = 0; i < outs; ++i) {
      out[axis] = -1;
      ctx.set_output("Out", i, out, x.dtype);
    }
    return;
  }
  if (sections.empty()) ctx.fail("needs num > 0 or a non-empty sections attribute");
  if (sections.size() != outs)
    ctx.fail("sections has " + std::to_string(sections.size()) + " entries but output Out has " +
             std::to_string(outs) + " vars");
  std::size_t unknown = sections.size();
  int64_t known_sum = 0;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (sections[i] == -1) {
      if (unknown != sections.size()) ctx.fail("sections has more than one -1");
      unknown = i;
    } else if (sections[i] < 0) {
      ctx.fail("sections " + shape_to_string(sections) + " has a negative entry");
    } else {
      known_sum += sections[i];
    }
  }
  if (dim >= 0) {
    if (unknown != sections.size()) {
      if (known_sum > dim)
        ctx.fail("sections " + shape_to_string(sections) + " exceed dim " + std::to_string(dim) +
                 " of " + ctx.describe_input("X"));
      sections[unknown] = dim - known_sum;
    } else if (known_sum != dim) {
      ctx.fail("sections " + shape_to_string(sections) + " sum to " + std::to_string(known_sum) +
               ", but " + ctx.describe_input("X") + " has dim " + std::to_string(dim) +
               " on axis " + std::to_string(axis));
    }
  }
  for (std::size_t i = 0; i < outs; ++i) {
    out[axis] = sections[i];
    ctx.set_output("Out", i, out, x.dtype);
  }
}

void infer_concat(InferContext& ctx) {
  const std::size_t n = ctx.input_count("X");
  if (n == 0) ctx.fail("input X is empty");
  const Var& first = ctx.input("X", 0);
  Shape out = first.shape;
  if (ctx.has_input("AxisTensor")) {
    ctx.set_output("Out", Shape(out.size(), -1), first.dtype);
    return;
  }
  const std::size_t axis = normalize_axis(ctx, ctx.int_attr("axis"), out.size(), "axis");
  for (std::size_t i = 1; i < n; ++i) {
    const Var& x = ctx.input("X", i);
    if (x.shape.size() != out.size())
      ctx.fail(ctx.describe_input("X", i) + " has rank " + std::to_string(x.shape.size()) +
               ", but " + ctx.describe_input("X", 0) + " has rank " +
               std::to_string(out.size()));
    if (x.dtype != first.dtype)
      ctx.fail(ctx.describe_input("X", i) + " has dtype " + std::string(to_string(x.dtype)) +
               ", but " + ctx.describe_input("X", 0) + " has " +
               std::string(to_string(first.dtype)));
    for (std::size_t d = 0; d < out.size(); ++d) {
      if (d == axis) {
        out[d] = (out[d] < 0 || x.shape[d] < 0) ? -1 : out[d] + x.shape[d];
      } else {
        out[d] = merge_dim(ctx, out[d], x.shape[d],
                           ctx.describe_input("X", i) + " disagrees on dim " + std::to_string(d));
      }
    }
  }
  ctx.set_output("Out", out, first.dtype);
}

void infer_coalesce(InferContext& ctx) {
  const std::size_t n = ctx.input_count("Input");
  if (n == 0) ctx.fail("input Input is empty");
  if (ctx.output_count("Output") != n)
    ctx.fail("output Output has " + std::to_string(ctx.output_count("Output")) +
             " vars but input Input has " + std::to_string(n));
  const DataType dtype = ctx.dtype_attr("dtype");
  int64_t size_of_dtype = ctx.int_attr("user_defined_size_of_dtype");
  if (size_of_dtype <= 0) size_of_dtype = static_cast<int64_t>(element_size(dtype));
  const bool use_align = ctx.bool_attr("use_align");
  int64_t align = ctx.int_attr("align_size");
  if (align <= 0) align = kDefaultAlignBytes;

  int64_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Var& in = ctx.input("Input", i);
    const int64_t numel = in.numel();
    if (numel == 0) ctx.fail(ctx.describe_input("Input", i) + " has no elements");
    if (numel < 0 || total < 0) {
      total = -1;
    } else if (use_align) {
      const int64_t bytes = numel * size_of_dtype;
      total += (bytes + align - 1) / align * align / size_of_dtype;
    } else {
      total += numel;
    }
  }
  ctx.pass_through("Input", "Output");
  ctx.set_output("FusedOutput", Shape{total}, dtype);
}

// cast converts X to out_dtype; in_dtype (Paddle writes both) must be X's.
void infer_cast(InferContext& ctx) {
  const Var& x = ctx.input("X");
  const DataType in = ctx.dtype_attr("in_dtype");
  if (x.dtype != in)
    ctx.fail(ctx.describe_input("X") + " has dtype " + std::string(to_string(x.dtype)) +
             ", but in_dtype is " + std::string(to_string(in)));
  ctx.set_output("Out", x.shape, ctx.dtype_attr("out_dtype"));
}

}  // namespace

void add_tensor_op_defs(OpRegistry& r) {
  add_def(r,
          {"fill_constant",
           {optional_one("ValueTensor"), optional_one("ShapeTensor"),
            optional_many("ShapeTensorList")},
           {one("Out")},
           initializer_attrs({attr("value", Attribute(0.0f)), attr("str_value", Attribute("")),
                              attr("force_cpu", Attribute(false)),
                              attr("place_type", Attribute(int32_t{-1}))})},
          infer_initializer);
  add_def(r,
          {"uniform_random",
           {optional_one("ShapeTensor"), optional_many("ShapeTensorList")},
           {one("Out")},
           initializer_attrs({attr("min", Attribute(-1.0f)), attr("max", Attribute(1.0f)),
                              attr("seed", Attribute(int32_t{0})),
                              attr("diag_num", Attribute(int32_t{0})),
                              attr("diag_step", Attribute(int32_t{0})),
                              attr("diag_val", Attribute(1.0f))})},
          infer_initializer);
  add_def(r,
          {"gaussian_random",
           {optional_one("ShapeTensor"), optional_many("ShapeTensorList")},
           {one("Out")},
           initializer_attrs({attr("mean", Attribute(0.0f)), attr("std", Attribute(1.0f)),
                              attr("seed", Attribute(int32_t{0})),
                              attr("use_mkldnn", Attribute(false))})},
          infer_initializer);
  // feed/fetch move data between the program and its caller: the fed var
  // keeps the shape its declaration gives, the fetch list has none.
  add_def(r, {"feed", {one("X")}, {one("Out")}, {required("col", AttrType::INT)}});
  add_def(r, {"fetch", {one("X")}, {one("Out")}, {required("col", AttrType::INT)}});
  add_def(r, {"assign", {optional_one("X")}, {one("Out")}, {}},
          [](InferContext& ctx) { ctx.pass_through("X", "Out"); });
  add_def(r,
          {"cast",
           {one("X")},
           {one("Out")},
           {required("in_dtype", AttrType::INT), required("out_dtype", AttrType::INT),
            attr("use_mkldnn", Attribute(false))}},
          infer_cast);
  add_def(r,
          {"split",
           {one("X"), optional_one("AxisTensor"), optional_many("SectionsTensorList")},
           {many("Out")},
           {attr("axis", Attribute(int32_t{0})), attr("num", Attribute(int32_t{0})),
            attr("sections", ints({}))}},
          infer_split);
  add_def(r,
          {"concat",
           {many("X"), optional_one("AxisTensor")},
           {one("Out")},
           {attr("axis", Attribute(int32_t{0})), attr("use_mkldnn", Attribute(false)),
            attr("use_quantizer", Attribute(false)),
            attr("mkldnn_data_type", Attribute("float32"))}},
          infer_concat);
  add_def(r,
          {"coalesce_tensor",
           {many("Input")},
           {many("Output"), one("FusedOutput")},
           {required("dtype", AttrType::INT), attr("copy_data", Attribute(false)),
            attr("set_constant", Attribute(false)), attr("persist_output", Attribute(false)),
            attr("constant", Attribute(0.0f)), attr("check_name", Attribute(false)),
            attr("use_align", Attribute(true)), attr("align_size", Attribute(int32_t{-1})),
            attr("user_defined_size_of_dtype", Attribute(int32_t{-1})),
            attr("concated_shapes", longs({}), {AttrType::INTS}),
            attr("concated_ranks", longs({}), {AttrType::INTS})}},
          infer_coalesce);
}

CTP_REGISTER_OP_DEFS(add_tensor_op_defs);

}  // namespace ctp::defs
