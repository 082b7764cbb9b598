#!/usr/bin/env python3.11
"""Writes the inputs of the golden transpiler cases: for each case a directory
tests/golden/<case>/ with startup.json, main.json (ctp's JSON program schema,
docs/json-format.md) and options.json (mode and options). The expected op
sequences beside them are written by scripts/update_golden.sh (ctp's own
transpile) and checked against the reference by scripts/golden_reference_check.py.

The programs look like what Paddle's static graph writes: forward ops, a loss
op with role Forward|Loss, the fill_constant seeding the loss gradient with
role Backward|Loss, backward ops carrying op_role_var [param, grad], and one
optimizer op per parameter with role Optimize and op_role_var.

Usage: tests/golden/generate_cases.py [--out DIR]   (default: beside this file)
"""
import argparse
import json
import os
import shutil

FORWARD, BACKWARD, OPTIMIZE, LRSCHED, LOSS = 0x0, 0x1, 0x2, 0x10, 0x100


def attr(type_, value):
    return {"type": type_, "value": value}


class ProgramWriter:
    def __init__(self):
        self.vars = []
        self.ops = []
        self.names = set()

    def var(self, name, shape=None, dtype="FP32", persistable=False, parameter=False,
            stop_gradient=False, distributed=False, type_="LOD_TENSOR", need_check_feed=False):
        if name in self.names:
            return
        self.names.add(name)
        v = {"name": name, "type": type_}
        if type_ in ("LOD_TENSOR", "SELECTED_ROWS", "LOD_TENSOR_ARRAY"):
            v["dtype"] = dtype
            v["shape"] = list(shape or [])
        # Flags that are false are left out (the schema's default).
        for key, value in (("persistable", persistable), ("is_parameter", parameter),
                           ("stop_gradient", stop_gradient), ("is_distributed", distributed),
                           ("need_check_feed", need_check_feed)):
            if value:
                v[key] = True
        self.vars.append(v)

    def op(self, type_, inputs, outputs, role, attrs=None, role_var=None, scope="/"):
        a = dict(attrs or {})
        a["op_role"] = attr("INT", role)
        if role_var is not None:
            a["op_role_var"] = attr("STRINGS", role_var)
        # Paddle puts these on every op; the text form leaves op_callstack out.
        a["op_namescope"] = attr("STRING", scope)
        a["op_device"] = attr("STRING", "")
        if role == FORWARD:
            a["op_callstack"] = attr("STRINGS", ['File "train.py", line 42, in <module>'])
        self.ops.append({"type": type_, "inputs": inputs, "outputs": outputs, "attrs": a})

    def program(self):
        return {"version": 0, "blocks": [{"idx": 0, "parent_idx": -1, "forward_block_idx": -1,
                                          "vars": self.vars, "ops": self.ops}]}


OPTIMIZER_STATE = {
    "sgd": [],
    "momentum": ["velocity"],
    "adam": ["moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"],
    "lamb": ["moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"],
}


def state_name(param, kind):
    return f"{param}_{kind}_0"


class Model:
    """An MLP (mul + elementwise_add + relu per layer), optionally with an
    embedding in front, a shared weight used twice, and FP16 parameters."""

    def __init__(self, layers=2, optimizer="sgd", dtype="FP32", fp16_layers=(),
                 embedding=None, shared=False, dup_role_var=False, beta_pow_scale=False,
                 no_params=False, hidden=32, main_edit=None):
        self.layers = 0 if no_params else layers
        self.optimizer = optimizer
        self.dtype = dtype
        self.fp16_layers = set(fp16_layers)
        self.embedding = embedding  # None, "dense" or "distributed"
        self.shared = shared
        self.dup_role_var = dup_role_var
        self.beta_pow_scale = beta_pow_scale
        self.no_params = no_params
        self.hidden = hidden
        self.main_edit = main_edit  # a function that breaks the main program (error cases)

    def layer_dtype(self, i):
        return "FP16" if i in self.fp16_layers else self.dtype

    def params(self):
        """(name, shape, dtype, distributed) in declaration order."""
        if self.no_params:
            return []
        out = []
        if self.embedding:
            out.append(("embedding_0.w_0", [1000, self.hidden], self.dtype,
                        self.embedding == "distributed"))
        for i in range(self.layers):
            dt = self.layer_dtype(i)
            out.append((f"fc_{i}.w_0", [self.hidden, self.hidden], dt, False))
            out.append((f"fc_{i}.b_0", [self.hidden], dt, False))
        return out

    def startup(self):
        w = ProgramWriter()
        if not self.no_params:
            w.var("learning_rate_0", [1], persistable=True, stop_gradient=True)
            w.op("fill_constant", {}, {"Out": ["learning_rate_0"]}, FORWARD,
                 {"shape": attr("LONGS", [1]), "dtype": attr("INT", 5),
                  "value": attr("FLOAT", 0.001)})
        for name, shape, dtype, distributed in self.params():
            w.var(name, shape, dtype, persistable=True, parameter=True, distributed=distributed)
            init = "gaussian_random" if name.startswith("embedding") else "uniform_random"
            w.op(init, {}, {"Out": [name]}, FORWARD,
                 {"shape": attr("LONGS", shape), "dtype": attr("INT", 5 if dtype == "FP32" else 4),
                  "seed": attr("INT", 0), "min": attr("FLOAT", -0.5), "max": attr("FLOAT", 0.5)})
            for kind in OPTIMIZER_STATE[self.optimizer]:
                sname = state_name(name, kind)
                sshape = [1] if "pow" in kind else shape
                w.var(sname, sshape, "FP32", persistable=True, stop_gradient=True)
                value = {"beta1_pow_acc": 0.9, "beta2_pow_acc": 0.999}.get(kind, 0.0)
                w.op("fill_constant", {}, {"Out": [sname]}, FORWARD,
                     {"shape": attr("LONGS", sshape), "dtype": attr("INT", 5),
                      "value": attr("FLOAT", value)})
        if self.no_params:
            w.var("step_counter", [1], "INT64", persistable=True, stop_gradient=True)
            w.op("fill_constant", {}, {"Out": ["step_counter"]}, FORWARD,
                 {"shape": attr("LONGS", [1]), "dtype": attr("INT", 3),
                  "value": attr("FLOAT", 0.0)})
        return w.program()

    def main(self):
        program = self.build_main()
        if self.main_edit:
            self.main_edit(program["blocks"][0])
        return program

    def build_main(self):
        w = ProgramWriter()
        h = self.hidden
        w.var("x", [-1, h], self.dtype, stop_gradient=True, need_check_feed=True)
        w.var("label", [-1, 1], "INT64", stop_gradient=True, need_check_feed=True)
        if not self.no_params:
            w.var("learning_rate_0", [1], persistable=True, stop_gradient=True)
        for name, shape, dtype, distributed in self.params():
            w.var(name, shape, dtype, persistable=True, parameter=True, distributed=distributed)
            w.var(name + "@GRAD", shape, dtype)
            for kind in OPTIMIZER_STATE[self.optimizer]:
                w.var(state_name(name, kind), [1] if "pow" in kind else shape, "FP32",
                      persistable=True, stop_gradient=True)

        def tmp(name, dtype=None, shape=None):
            w.var(name, shape or [-1, h], dtype or self.dtype)
            w.var(name + "@GRAD", shape or [-1, h], dtype or self.dtype)

        backward = []  # (callable) emitted in reverse
        cur = "x"
        if self.embedding:
            w.var("ids", [-1, 1], "INT64", stop_gradient=True, need_check_feed=True)
            tmp("embedding_0.tmp_0")
            w.op("lookup_table_v2", {"Ids": ["ids"], "W": ["embedding_0.w_0"]},
                 {"Out": ["embedding_0.tmp_0"]}, FORWARD,
                 {"is_distributed": attr("BOOLEAN", self.embedding == "distributed"),
                  "padding_idx": attr("LONG", -1)})
            tmp("x_plus_emb")
            w.op("elementwise_add", {"X": ["x"], "Y": ["embedding_0.tmp_0"]},
                 {"Out": ["x_plus_emb"]}, FORWARD, {"axis": attr("INT", -1)})
            backward.append(lambda: (
                w.op("elementwise_add_grad",
                     {"Out@GRAD": ["x_plus_emb@GRAD"], "X": ["x"], "Y": ["embedding_0.tmp_0"]},
                     {"Y@GRAD": ["embedding_0.tmp_0@GRAD"]}, BACKWARD, {"axis": attr("INT", -1)}),
                w.op("lookup_table_v2_grad",
                     {"Ids": ["ids"], "Out@GRAD": ["embedding_0.tmp_0@GRAD"],
                      "W": ["embedding_0.w_0"]},
                     {"W@GRAD": ["embedding_0.w_0@GRAD"]}, BACKWARD,
                     {"is_sparse": attr("BOOLEAN", False)},
                     role_var=["embedding_0.w_0", "embedding_0.w_0@GRAD"])))
            cur = "x_plus_emb"
        for i in range(self.layers):
            dt = self.layer_dtype(i)
            wn, bn = f"fc_{i}.w_0", f"fc_{i}.b_0"
            m, a, r = f"fc_{i}.tmp_0", f"fc_{i}.tmp_1", f"relu_{i}.tmp_0"
            tmp(m, dt), tmp(a, dt), tmp(r, dt)
            src = cur
            w.op("mul", {"X": [src], "Y": [wn]}, {"Out": [m]}, FORWARD,
                 {"x_num_col_dims": attr("INT", 1), "y_num_col_dims": attr("INT", 1)},
                 scope=f"/fc_{i}/")
            w.op("elementwise_add", {"X": [m], "Y": [bn]}, {"Out": [a]}, FORWARD,
                 {"axis": attr("INT", 1)}, scope=f"/fc_{i}/")
            w.op("relu", {"X": [a]}, {"Out": [r]}, FORWARD)

            def grads(i=i, src=src, wn=wn, bn=bn, m=m, a=a, r=r):
                w.op("relu_grad", {"Out": [r], "Out@GRAD": [r + "@GRAD"]}, {"X@GRAD": [a + "@GRAD"]},
                     BACKWARD)
                w.op("elementwise_add_grad", {"Out@GRAD": [a + "@GRAD"], "X": [m], "Y": [bn]},
                     {"X@GRAD": [m + "@GRAD"], "Y@GRAD": [bn + "@GRAD"]}, BACKWARD,
                     {"axis": attr("INT", 1)}, role_var=[bn, bn + "@GRAD"])
                # A shared weight's partial grads get renamed and summed (below).
                shared_here = self.shared and i == 0
                wg = wn + "@GRAD@RENAME@block0@1" if shared_here else wn + "@GRAD"
                if shared_here:
                    w.var(wg, [h, h], dt)
                outs = {"Y@GRAD": [wg]}
                if src != "x":
                    outs = {"X@GRAD": [src + "@GRAD"], "Y@GRAD": [wg]}
                w.op("mul_grad", {"Out@GRAD": [m + "@GRAD"], "X": [src], "Y": [wn]}, outs,
                     BACKWARD, {"x_num_col_dims": attr("INT", 1), "y_num_col_dims": attr("INT", 1)},
                     role_var=None if shared_here else [wn, wn + "@GRAD"])
            backward.append(grads)
            cur = r
        if self.shared and not self.no_params:
            # fc_0.w_0 used a second time: two partial grads summed into fc_0.w_0@GRAD,
            # which Paddle marks on the sum op.
            tmp("shared.tmp_0")
            w.op("mul", {"X": [cur], "Y": ["fc_0.w_0"]}, {"Out": ["shared.tmp_0"]}, FORWARD,
                 {"x_num_col_dims": attr("INT", 1), "y_num_col_dims": attr("INT", 1)})
            src = cur

            def shared_grads(src=src):
                w.var("fc_0.w_0@GRAD@RENAME@block0@0", [h, h], self.layer_dtype(0))
                w.op("mul_grad", {"Out@GRAD": ["shared.tmp_0@GRAD"], "X": [src], "Y": ["fc_0.w_0"]},
                     {"X@GRAD": [src + "@GRAD"], "Y@GRAD": ["fc_0.w_0@GRAD@RENAME@block0@0"]},
                     BACKWARD, {"x_num_col_dims": attr("INT", 1), "y_num_col_dims": attr("INT", 1)},
                     role_var=(["fc_0.w_0", "fc_0.w_0@GRAD"] if self.dup_role_var else None))
            backward.append(shared_grads)
            cur = "shared.tmp_0"
        if cur == "x":
            w.var("x@GRAD", [-1, h], self.dtype)
        # loss
        w.var("softmax_0.tmp_0", [-1, h], self.dtype)
        w.var("loss_per_sample", [-1, 1], self.dtype)
        w.var("loss_per_sample@GRAD", [-1, 1], self.dtype)
        w.var("mean_0.tmp_0", [1], self.dtype)
        w.var("mean_0.tmp_0@GRAD", [1], self.dtype)
        w.op("softmax_with_cross_entropy", {"Label": ["label"], "Logits": [cur]},
             {"Loss": ["loss_per_sample"], "Softmax": ["softmax_0.tmp_0"]}, FORWARD,
             {"soft_label": attr("BOOLEAN", False), "ignore_index": attr("INT", -100),
              "axis": attr("INT", -1)})
        w.op("mean", {"X": ["loss_per_sample"]}, {"Out": ["mean_0.tmp_0"]}, FORWARD | LOSS)
        w.op("fill_constant", {}, {"Out": ["mean_0.tmp_0@GRAD"]}, BACKWARD | LOSS,
             {"shape": attr("LONGS", [1]), "dtype": attr("INT", 5 if self.dtype == "FP32" else 4),
              "value": attr("FLOAT", 1.0), "force_cpu": attr("BOOLEAN", False)})
        w.op("mean_grad", {"Out@GRAD": ["mean_0.tmp_0@GRAD"], "X": ["loss_per_sample"]},
             {"X@GRAD": ["loss_per_sample@GRAD"]}, BACKWARD)
        w.op("softmax_with_cross_entropy_grad",
             {"Label": ["label"], "Loss@GRAD": ["loss_per_sample@GRAD"],
              "Softmax": ["softmax_0.tmp_0"]},
             {"Logits@GRAD": [cur + "@GRAD"]}, BACKWARD,
             {"soft_label": attr("BOOLEAN", False), "axis": attr("INT", -1)})
        for emit in reversed(backward):
            emit()
        if self.shared and not self.no_params:
            # Paddle sums the partial grads and marks the sum with op_role_var.
            w.op("sum", {"X": ["fc_0.w_0@GRAD@RENAME@block0@0",
                               "fc_0.w_0@GRAD@RENAME@block0@1"]},
                 {"Out": ["fc_0.w_0@GRAD"]}, BACKWARD, {"use_mkldnn": attr("BOOLEAN", False)},
                 role_var=["fc_0.w_0", "fc_0.w_0@GRAD"])
        if self.no_params:
            w.var("step_counter", [1], "INT64", persistable=True, stop_gradient=True)
            w.op("increment", {"X": ["step_counter"]}, {"Out": ["step_counter"]}, LRSCHED,
                 {"step": attr("FLOAT", 1.0)})
            return w.program()
        # optimizer
        for name, shape, dtype, distributed in self.params():
            self.optimizer_op(w, name)
        return w.program()

    def optimizer_op(self, w, p):
        g = p + "@GRAD"
        ins = {"Param": [p], "Grad": [g], "LearningRate": ["learning_rate_0"]}
        outs = {"ParamOut": [p]}
        attrs = {}
        opt = self.optimizer
        if opt == "momentum":
            v = state_name(p, "velocity")
            ins["Velocity"] = [v]
            outs["VelocityOut"] = [v]
            attrs = {"mu": attr("FLOAT", 0.9), "use_nesterov": attr("BOOLEAN", False),
                     "regularization_method": attr("STRING", ""),
                     "regularization_coeff": attr("FLOAT", 0.0)}
        elif opt in ("adam", "lamb"):
            m1, m2, b1, b2 = (state_name(p, k) for k in OPTIMIZER_STATE[opt])
            ins.update({"Moment1": [m1], "Moment2": [m2], "Beta1Pow": [b1], "Beta2Pow": [b2]})
            outs.update({"Moment1Out": [m1], "Moment2Out": [m2], "Beta1PowOut": [b1],
                         "Beta2PowOut": [b2]})
            attrs = {"beta1": attr("FLOAT", 0.9), "beta2": attr("FLOAT", 0.999),
                     "epsilon": attr("FLOAT", 1e-08)}
            if opt == "adam":
                attrs.update({"lazy_mode": attr("BOOLEAN", False),
                              "min_row_size_to_use_multithread": attr("LONG", 1000),
                              "multi_precision": attr("BOOLEAN", False)})
            else:
                attrs["weight_decay"] = attr("FLOAT", 0.01)
        w.op(opt, ins, outs, OPTIMIZE, attrs, role_var=[p, g], scope="/optimizer/")
        if self.beta_pow_scale and opt == "adam":
            # Paddle 1.x updated the beta pow accumulators with scale ops of role Optimize.
            for k, beta in (("beta1_pow_acc", 0.9), ("beta2_pow_acc", 0.999)):
                s = state_name(p, k)
                w.op("scale", {"X": [s]}, {"Out": [s]}, OPTIMIZE,
                     {"scale": attr("FLOAT", beta), "bias": attr("FLOAT", 0.0),
                      "bias_after_scale": attr("BOOLEAN", True)}, scope="/optimizer/")


def dump_program(program, f):
    """JSON with one var or op per line: small files that still diff well."""
    block = program["blocks"][0]
    head = {k: v for k, v in block.items() if k not in ("vars", "ops")}
    f.write('{"version": %d, "blocks": [%s, "vars": [\n' % (
        program["version"], json.dumps(head)[:-1]))
    f.write(",\n".join(json.dumps(v) for v in block["vars"]))
    f.write('],\n"ops": [\n')
    f.write(",\n".join(json.dumps(o) for o in block["ops"]))
    f.write("]}]}\n")


def drop_var(name):
    def edit(block):
        block["vars"] = [v for v in block["vars"] if v["name"] != name]
    return edit


def odd_role_var(block):
    for op in block["ops"]:
        if op["type"] == "mul_grad" and "op_role_var" in op["attrs"]:
            op["attrs"]["op_role_var"]["value"] = op["attrs"]["op_role_var"]["value"][:1]
            return


def drop_optimizer_ops(block):
    block["ops"] = [op for op in block["ops"] if op["attrs"]["op_role"]["value"] != OPTIMIZE]


def declare_var(var):
    def edit(block):
        block["vars"].append(var)
    return edit


def endpoints(nranks, hosts):
    """nranks endpoints spread round-robin over `hosts` hosts (hosts == 1: one machine)."""
    out = []
    for r in range(nranks):
        host = f"10.0.0.{r % hosts + 1}" if hosts > 1 else "127.0.0.1"
        out.append(f"{host}:{6170 + r}")
    return out


CASES = []


def case(name, mode, model, nranks, rank, hosts=1, nrings=None, error=None, **options):
    opts = {"mode": mode, "rank": rank, "endpoints": endpoints(nranks, hosts)}
    if nrings is not None:
        opts["nrings"] = nrings
    opts.update(options)
    CASES.append((name, model, opts, error))


def define_cases():
    G, L, S, M = "grad_allreduce", "local_sgd", "single_process_multi_thread", "multi_thread"
    # GradAllReduce
    case("grad_allreduce_sgd_n2_r0_ring1", G, Model(optimizer="sgd"), 2, 0, nrings=1)
    case("grad_allreduce_momentum_n4_r3_ring2_multihost", G, Model(optimizer="momentum"), 4, 3,
         hosts=2, nrings=2)
    case("grad_allreduce_adam_n8_r5_ring3_multihost", G, Model(optimizer="adam", layers=3), 8, 5,
         hosts=4, nrings=3)
    case("grad_allreduce_sgd_n8_r0_default_rings", G, Model(layers=3), 8, 0)
    case("grad_allreduce_adam_n2_r1_ring1_multihost", G, Model(optimizer="adam"), 2, 1, hosts=2,
         nrings=1)
    case("grad_allreduce_distributed_embedding_n4_r1_ring2", G,
         Model(embedding="distributed"), 4, 1, nrings=2)
    case("grad_allreduce_fp16_n2_r0_ring3", G, Model(dtype="FP16", layers=3), 2, 0, nrings=3)
    case("grad_allreduce_shared_param_n4_r2_ring2", G, Model(shared=True), 4, 2, nrings=2)
    case("grad_allreduce_duplicate_role_var_n2_r1_ring2", G, Model(shared=True, dup_role_var=True),
         2, 1, nrings=2)
    case("grad_allreduce_140_params_n8_r7_ring3_multihost", G, Model(layers=70, hidden=8), 8, 7,
         hosts=8, nrings=3)
    case("grad_allreduce_wait_port_n2_r0", G, Model(), 2, 0, nrings=2, wait_port=True)
    case("grad_allreduce_explicit_current_endpoint_n4_r1", G, Model(), 4, 1, nrings=2,
         current_endpoint="127.0.0.1:6172")
    case("grad_allreduce_error_no_params", G, Model(no_params=True), 2, 0, nrings=2,
         error=("UnboundLocalError", "declares no parameter"))
    case("grad_allreduce_error_one_endpoint", G, Model(), 1, 0, nrings=2,
         error=("ValueError", "the number of endpoints must be > 1"))
    case("grad_allreduce_error_negative_rank", G, Model(), 2, -1, nrings=2,
         current_endpoint="127.0.0.1:6170", error=("ValueError", "rank must be >= 0"))
    case("grad_allreduce_error_endpoint_not_listed", G, Model(), 2, 0, nrings=2,
         current_endpoint="10.9.9.9:6170", error=("ValueError", "is not in"))
    case("grad_allreduce_error_undeclared_grad", G, Model(main_edit=drop_var("fc_1.w_0@GRAD")),
         2, 0, error=("KeyError", "op_role_var grad 'fc_1.w_0@GRAD' is not declared"))
    # LocalSGD
    case("local_sgd_sgd_n2_r0_ring1", L, Model(), 2, 0, nrings=1)
    case("local_sgd_momentum_n4_r2_ring2_multihost", L, Model(optimizer="momentum"), 4, 2,
         hosts=2, nrings=2)
    case("local_sgd_adam_n8_r7_ring3", L, Model(optimizer="adam"), 8, 7, nrings=3)
    case("local_sgd_distributed_embedding_n2_r1_ring2", L, Model(embedding="distributed"), 2, 1,
         nrings=2)
    case("local_sgd_fp16_n4_r1_ring1", L, Model(dtype="FP16"), 4, 1, nrings=1)
    case("local_sgd_shared_param_n2_r0_ring3", L, Model(shared=True), 2, 0, nrings=3)
    case("local_sgd_140_params_n4_r3_default_rings_multihost", L, Model(layers=70, hidden=8), 4, 3,
         hosts=4)
    case("local_sgd_error_no_params", L, Model(no_params=True), 2, 1, nrings=2,
         error=("UnboundLocalError", "declares no parameter"))
    case("local_sgd_error_no_update_op", L, Model(main_edit=drop_optimizer_ops), 2, 1,
         error=("UnboundLocalError", "has no update op"))
    case("local_sgd_error_snapshot_redeclared", L,
         Model(main_edit=declare_var({"name": "fc_1.b_0@SNAPSHOT", "dtype": "FP32", "shape": [3],
                                      "persistable": True})), 2, 0,
         error=("ValueError", "already has var 'fc_1.b_0@SNAPSHOT' with shape [3]"))
    case("local_sgd_error_one_endpoint", L, Model(), 1, 0, error=("ValueError", "must be > 1"))
    # SingleProcessMultiThread
    case("spmt_fuse1_one_endpoint_sgd", S, Model(), 1, 0)
    case("spmt_fuse1_single_host_n4_r2_adam", S, Model(optimizer="adam"), 4, 2)
    case("spmt_fuse1_two_hosts_n4_r3_momentum", S, Model(optimizer="momentum"), 4, 3, hosts=2,
         fuse_allreduce=1)
    case("spmt_fuse2_four_hosts_n8_r5_adam", S, Model(optimizer="adam"), 8, 5, hosts=4,
         fuse_allreduce=2)
    case("spmt_fuse0_two_hosts_n2_r1_sgd", S, Model(), 2, 1, hosts=2, fuse_allreduce=0)
    case("spmt_loss_scale0_two_hosts_n2_r0", S, Model(), 2, 0, hosts=2, loss_scale=0)
    case("spmt_no_params_loss_scale1_n2", S, Model(no_params=True), 2, 1, hosts=2)
    case("spmt_no_params_loss_scale0_n2", S, Model(no_params=True), 2, 0, hosts=2, loss_scale=0)
    case("spmt_distributed_embedding_two_hosts_n4_r1", S, Model(embedding="distributed"), 4, 1,
         hosts=2)
    case("spmt_fp16_two_hosts_n2_r0", S, Model(dtype="FP16"), 2, 0, hosts=2)
    case("spmt_two_gpus_two_hosts_n4_r2", S, Model(), 4, 2, hosts=2, selected_gpus="0,1")
    case("spmt_140_params_fuse1_two_hosts_n8_r4", S, Model(layers=70, hidden=8), 8, 4, hosts=2)
    case("spmt_error_endpoint_not_listed", S, Model(), 2, 0, current_endpoint="1.2.3.4:5",
         error=("ValueError", "is not in"))
    # MultiThread
    case("multi_thread_fuse_one_endpoint_sgd", M, Model(), 1, 0, trans_mode="fuse_all_reduce")
    case("multi_thread_fuse_n2_r1_ring1_momentum_multihost", M, Model(optimizer="momentum"), 2, 1,
         hosts=2, nrings=1, trans_mode="fuse_all_reduce")
    case("multi_thread_fuse_mixed_fp16_n4_r0_ring2", M, Model(layers=3, fp16_layers=(1,)), 4, 0,
         nrings=2, trans_mode="fuse_all_reduce")
    case("multi_thread_fuse_140_params_n8_r3_ring3", M, Model(layers=70, hidden=8), 8, 3, hosts=2,
         nrings=3, trans_mode="fuse_all_reduce")
    case("multi_thread_fuse_140_params_mixed_fp16_n2_r1", M,
         Model(layers=70, hidden=8, fp16_layers=range(30, 40)), 2, 1, trans_mode="fuse_all_reduce")
    case("multi_thread_fuse_distributed_embedding_n2_r0", M, Model(embedding="distributed"), 2, 0,
         trans_mode="fuse_all_reduce")
    case("multi_thread_fuse_shared_param_n4_r1_default", M, Model(shared=True), 4, 1)
    case("multi_thread_allgather_adam_n2_r0_ring1_two_gpus", M, Model(optimizer="adam"), 2, 0,
         nrings=1, trans_mode="all_gather", selected_gpus="0,1")
    case("multi_thread_allgather_adam_n4_r3_ring2_default_gpus", M, Model(optimizer="adam",
         layers=1), 4, 3, hosts=2, nrings=2, trans_mode="all_gather")
    case("multi_thread_allgather_adam_beta_pow_scale_n2_r1", M,
         Model(optimizer="adam", layers=1, beta_pow_scale=True), 2, 1, trans_mode="all_gather",
         selected_gpus="0")
    case("multi_thread_allgather_momentum_n4_r2_ring2", M, Model(optimizer="momentum"), 4, 2,
         nrings=2, trans_mode="all_gather", selected_gpus="0,1,2,3")
    case("multi_thread_allgather_distributed_adam_n2_r1_ring3", M,
         Model(optimizer="adam", layers=1, embedding="distributed"), 2, 1, nrings=3,
         trans_mode="all_gather", selected_gpus="0,1")
    case("multi_thread_allgather_one_endpoint_sgd", M, Model(), 1, 0, trans_mode="all_gather",
         selected_gpus="0,1")
    case("multi_thread_allreduce_n4_r1_ring2_multihost", M, Model(optimizer="adam"), 4, 1,
         hosts=4, nrings=2, trans_mode="all_reduce")
    case("multi_thread_allreduce_shared_param_n8_r7_ring3", M, Model(shared=True), 8, 7, nrings=3,
         trans_mode="all_reduce")
    case("multi_thread_no_params_n2_r0", M, Model(no_params=True), 2, 0,
         trans_mode="fuse_all_reduce")
    case("multi_thread_error_odd_role_var", M, Model(main_edit=odd_role_var), 2, 0,
         error=("AssertionError", "odd length 1"))
    case("multi_thread_error_lamb_all_gather", M, Model(optimizer="lamb", layers=1), 2, 0,
         trans_mode="all_gather", selected_gpus="0",
         error=("RuntimeError", "has no attribute 'lazy_mode'"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    define_cases()
    names = set()
    for name, model, opts, error in CASES:
        assert name not in names, name
        names.add(name)
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "startup.json"), "w") as f:
            dump_program(model.startup(), f)
        with open(os.path.join(d, "main.json"), "w") as f:
            dump_program(model.main(), f)
        with open(os.path.join(d, "options.json"), "w") as f:
            json.dump(opts, f, indent=1)
            f.write("\n")
        err = os.path.join(d, "error.expected.txt")
        if error:
            with open(err, "w") as f:
                f.write(f"{error[0]}\n{error[1]}\n")
            for stale in ("startup.expected.txt", "main.expected.txt"):
                if os.path.exists(os.path.join(d, stale)):
                    os.remove(os.path.join(d, stale))
        elif os.path.exists(err):
            os.remove(err)
    # Remove case directories that are no longer defined.
    for entry in os.listdir(args.out):
        p = os.path.join(args.out, entry)
        if os.path.isdir(p) and entry not in names and os.path.exists(os.path.join(p, "options.json")):
            shutil.rmtree(p)
    print(f"wrote {len(CASES)} cases under {args.out}")


if __name__ == "__main__":
    main()
