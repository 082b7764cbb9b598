// The one place type of errors (program_ir/source_location.h): how each kind
// of place prints, how an outer place completes an inner one without naming
// anything twice, ctp::Error carrying it apart from its message, and the
// readers filling its fields (not just the text) for malformed files.
#include <gtest/gtest.h>

#include <type_traits>

#include "program_ir/error.h"
#include "program_ir/json_io.h"
#include "program_ir/proto_io.h"
#include "tests/pb_test_encoder.h"

namespace ctp {
namespace {

using testing_pb::Pb;

// An error type of its own, as CommAbortedError is.
class NamedError : public Error {
 public:
  using Error::Error;
};

TEST(SourceLocation, EachKindOfPlacePrintsAsMessagesRead) {
  EXPECT_EQ(SourceLocation{}.to_string(), "");
  EXPECT_TRUE(SourceLocation{}.empty());
  // The readers.
  EXPECT_EQ((SourceLocation{.source = "prog.pb", .block = 0, .op = 3, .op_type = "mul",
                            .attr = 2, .attr_name = "x_num_col_dims"})
                .to_string(),
            "prog.pb: block 0, op 3 'mul', attr 'x_num_col_dims'");
  EXPECT_EQ((SourceLocation{.source = "bad.pb", .block = 0, .var = 1}).to_string(),
            "bad.pb: block 0, var 1");
  EXPECT_EQ((SourceLocation{.block = 0, .op = 1, .op_type = "mul", .slot_side = "output", .slot = 0})
                .to_string(),
            "block 0, op 1 'mul', output 0");
  EXPECT_EQ((SourceLocation{.source = "bad.pb", .part = "op_version_map"}).to_string(),
            "bad.pb: op_version_map");
  EXPECT_EQ((SourceLocation{.source = "prog.json", .path = "blocks[0].ops[3].attrs.scale",
                            .block = 0, .op = 3, .attr_name = "scale"})
                .to_string(),
            "prog.json: blocks[0].ops[3].attrs.scale");
  EXPECT_EQ((SourceLocation{.source = "prog.json", .line = 3, .column = 15}).to_string(),
            "prog.json: line 3, column 15");
  // Names from a hostile file are escaped and cut short.
  EXPECT_EQ((SourceLocation{.block = 0, .op = 1, .op_type = "bad\ntype"}).to_string(),
            "block 0, op 1 'bad\\x0atype'");
  EXPECT_EQ((SourceLocation{.var_name = std::string(100, 'v')}).to_string(),
            "var '" + std::string(80, 'v') + "...'");
  // A pass; an op known by its type alone; a batch of ops.
  EXPECT_EQ((SourceLocation{.pass = "grad_allreduce main", .block = 0, .op = 11,
                            .op_type = "mul_grad"})
                .to_string(),
            "grad_allreduce main: block 0, op 11 'mul_grad'");
  EXPECT_EQ((SourceLocation{.op_type = "mul", .attr_name = "op_role_var"}).to_string(),
            "op 'mul', attr 'op_role_var'");
  EXPECT_EQ((SourceLocation{.block = 0, .op = 5, .op_count = 5, .op_type = "sgd"}).to_string(),
            "block 0, ops 5 to 9 (5 'sgd' run as one batch)");
  // A run: the op, then the rank, ring and collective, as c10d names them.
  EXPECT_EQ((SourceLocation{.block = 0, .op = 2, .op_type = "c_allreduce_sum", .rank = 1,
                            .nranks = 4, .ring = 0, .backend = "gloo",
                            .collective = "all_reduce(sum) FP32[8]"})
                .to_string(),
            "block 0, op 2 'c_allreduce_sum': rank 1 of 4, ring 0 (gloo): all_reduce(sum) FP32[8]");
}

TEST(SourceLocation, AnOuterPlaceAddsOnlyWhatTheInnerOneLacks) {
  const SourceLocation op{.block = 0, .op = 3, .op_type = "mul"};
  // A lower layer knew the var; the executor knows the op.
  SourceLocation var{.var_name = "x"};
  var.fill_from(op);
  EXPECT_EQ(var, (SourceLocation{.block = 0, .op = 3, .op_type = "mul", .var_name = "x"}));
  // Filling again changes nothing: nothing is named twice.
  SourceLocation again = var;
  again.fill_from(op);
  EXPECT_EQ(again, var);
  EXPECT_EQ(again.to_string(), "block 0, op 3 'mul', var 'x'");

  // An inner op (a kernel ran another block's op) is kept whole.
  SourceLocation inner{.block = 1, .op = 0, .op_type = "relu", .attr_name = "a"};
  inner.fill_from(SourceLocation{.source = "prog.pb", .block = 0, .op = 3, .op_type = "while",
                                 .var_name = "w"});
  EXPECT_EQ(inner, (SourceLocation{.source = "prog.pb", .block = 1, .op = 0, .op_type = "relu",
                                   .attr_name = "a"}));

  // An op named by its type alone is the outer op of that type, not another.
  SourceLocation by_type{.op_type = "mul_grad", .attr_name = "op_role_var"};
  by_type.fill_from(SourceLocation{.pass = "grad_allreduce main", .block = 0, .op = 9,
                                   .op_type = "mul_grad"});
  EXPECT_EQ(by_type.to_string(), "grad_allreduce main: block 0, op 9 'mul_grad', attr 'op_role_var'");
  SourceLocation other_type{.op_type = "relu"};
  other_type.fill_from(op);
  EXPECT_EQ(other_type, (SourceLocation{.op_type = "relu"}));

  // A communicator knew the rank, ring and call; the executor adds the op.
  SourceLocation ring{.rank = 1, .nranks = 2, .ring = 0, .backend = "threads",
                      .collective = "barrier"};
  ring.fill_from(op);
  EXPECT_EQ(ring.to_string(), "block 0, op 3 'mul': rank 1 of 2, ring 0 (threads): barrier");
}

TEST(Error, CarriesItsPlaceApartFromItsMessage) {
  static_assert(std::is_nothrow_copy_constructible_v<Error>);
  const SourceLocation at{.source = "bad.pb", .block = 0, .op = 1, .op_type = "mul",
                          .attr_name = "axis"};
  Error e(at, "invalid AttrType 18");
  EXPECT_STREQ(e.what(), "bad.pb: block 0, op 1 'mul', attr 'axis': invalid AttrType 18");
  EXPECT_EQ(e.message(), "invalid AttrType 18");
  EXPECT_EQ(e.place(), at);

  Error plain("no place");
  EXPECT_STREQ(plain.what(), "no place");
  EXPECT_TRUE(plain.place().empty());
}

TEST(Error, LocateNamesEachPartOnce) {
  Error e(SourceLocation{.var_name = "x"}, "is not declared");
  const Error before = e;
  e.locate(SourceLocation{.block = 0, .op = 3, .op_type = "mul"});
  EXPECT_STREQ(e.what(), "block 0, op 3 'mul', var 'x': is not declared");
  e.locate(SourceLocation{.block = 0, .op = 3, .op_type = "mul"});
  e.locate(SourceLocation{.block = 0, .op = 4, .op_type = "relu"});
  EXPECT_STREQ(e.what(), "block 0, op 3 'mul', var 'x': is not declared");
  // Copies taken before are unchanged.
  EXPECT_STREQ(before.what(), "var 'x': is not declared");
  // A derived error keeps its type through locate and `throw;`.
  try {
    try {
      throw NamedError(SourceLocation{.ring = 0}, "aborted");
    } catch (Error& inner) {
      inner.locate(SourceLocation{.block = 0, .op = 1, .op_type = "c_allreduce_sum"});
      throw;
    }
  } catch (const NamedError& outer) {
    EXPECT_STREQ(outer.what(), "block 0, op 1 'c_allreduce_sum': ring 0: aborted");
  }
}

Error proto_error(const std::string& bytes) {
  try {
    parse_program_proto(bytes, "bad.pb");
  } catch (const Error& e) {
    return e;
  }
  return Error("(no error)");
}

Pb relu_op() { return Pb().msg(1, Pb().str(1, "X").str(2, "x")).str(3, "relu"); }

TEST(ReaderPlaces, AMalformedProtobufErrorsFieldsNameItsPlace) {
  Pb var = Pb().str(1, "x").msg(2, Pb().varint(1, 7).msg(3, Pb().msg(1, Pb().varint(1, 5))));
  // An attribute of an unknown type: op 1's attr 1.
  Pb mul = Pb().str(3, "mul")
               .msg(4, Pb().str(1, "x_num_col_dims").varint(2, 0).varint(3, 1))
               .msg(4, Pb().str(1, "axis").varint(2, 18));
  Pb block = Pb().varint(1, 0).int32(2, -1).msg(3, var).msg(4, relu_op()).msg(4, mul);
  Error e = proto_error(Pb().msg(1, block).bytes());
  EXPECT_EQ(e.message(), "invalid AttrType 18");
  EXPECT_EQ(e.place(), (SourceLocation{.source = "bad.pb", .block = 0, .op = 1, .op_type = "mul",
                                       .attr = 1, .attr_name = "axis"}));

  // After a var with attributes and an op with slots and attributes, the
  // next op's error names that op alone: no field of an earlier place is left.
  Pb typeless = Pb().msg(1, Pb().str(1, "X").str(2, "x"));
  Pb var_with_attr = Pb(var).msg(7, Pb().str(1, "a").varint(2, 0).varint(3, 1));
  Pb full = Pb().str(3, "mul").msg(1, Pb().str(1, "X").str(2, "x"))
                .msg(4, Pb().str(1, "x_num_col_dims").varint(2, 0).varint(3, 1));
  Pb second = Pb().varint(1, 1).int32(2, 0).msg(3, var_with_attr).msg(4, full).msg(4, typeless);
  Pb first = Pb().varint(1, 0).int32(2, -1).msg(3, var).msg(4, relu_op());
  e = proto_error(Pb().msg(1, first).msg(1, second).bytes());
  EXPECT_EQ(e.message(), "OpDesc has no type (field 3)");
  EXPECT_EQ(e.place(), (SourceLocation{.source = "bad.pb", .block = 1, .op = 1}));

  // A var declared twice: the block and the var's position and name.
  Pb twice = Pb().varint(1, 0).int32(2, -1).msg(3, var).msg(3, var);
  e = proto_error(Pb().msg(1, twice).bytes());
  EXPECT_EQ(e.place(), (SourceLocation{.source = "bad.pb", .block = 0, .var = 1, .var_name = "x"}));
  EXPECT_STREQ(e.what(), "bad.pb: block 0, var 'x': declared twice in the block");

  // A program-level part.
  e = proto_error(Pb().msg(5, Pb().msg(1, Pb().str(1, "mul"))).bytes());
  EXPECT_EQ(e.place(), (SourceLocation{.source = "bad.pb", .part = "op_version_map"}));
}

Error json_error(const std::string& text) {
  try {
    parse_program_json(text, "prog.json");
  } catch (const Error& e) {
    return e;
  }
  return Error("(no error)");
}

TEST(ReaderPlaces, AMalformedJsonErrorsFieldsNameItsPlace) {
  const std::string head = R"({"blocks": [{"idx": 0, "parent_idx": -1, "vars": [{"name": "x"}], )";
  Error e = json_error(head + R"("ops": [{"type": "a"}, {"type": "t", "attrs": {"axis": 1}}]}]})");
  EXPECT_EQ(e.message(), "expected an object, got a number");
  EXPECT_EQ(e.place(), (SourceLocation{.source = "prog.json", .path = "blocks[0].ops[1].attrs.axis",
                                       .block = 0, .op = 1, .attr_name = "axis"}));
  EXPECT_STREQ(e.what(), "prog.json: blocks[0].ops[1].attrs.axis: expected an object, got a number");

  e = json_error(head + R"("ops": [{"type": "t", "inputs": {"X": ["a", 3]}}]}]})");
  EXPECT_EQ(e.place(), (SourceLocation{.source = "prog.json", .path = "blocks[0].ops[0].inputs.X[1]",
                                       .block = 0, .op = 0, .slot_side = "input",
                                       .slot_name = "X"}));

  e = json_error(R"({"blocks": [{"idx": 0, "parent_idx": -1, "vars": [{"name": "x"},
                     {"name": "y", "type": "NOPE"}]}]})");
  EXPECT_EQ(e.place(), (SourceLocation{.source = "prog.json", .path = "blocks[0].vars[1].type",
                                       .block = 0, .var = 1}));

  e = json_error("{\n  \"blocks\": [,]\n}");
  EXPECT_EQ(e.place(), (SourceLocation{.source = "prog.json", .line = 2, .column = 14}));
}

}  // namespace
}  // namespace ctp
