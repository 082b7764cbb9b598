"""The executor with NumPy feeds and fetches, and the sample Python trainer on
two workers started by `ctp launch`."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import ctp
from conftest import SOURCE_DIR


def mul_program(rows=3, cols=2):
    b = ctp.ProgramBuilder()
    b.data("x", [-1, rows])
    b.param("w", [rows, cols])
    b.tmp("y", [-1, cols])
    b.op("mul").input("X", "x").input("Y", "w").output("Out", "y")
    return b.build()


def test_feeds_and_fetches_are_numpy_arrays():
    program = mul_program()
    runtime = ctp.DeviceRuntime("cpu")
    scope = ctp.Scope()
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    runtime.bind(scope, "w", w)
    exe = ctp.Executor(program, runtime)
    x = np.array([[1, 2, 3], [-1, 0, 0.5]], dtype=np.float32)
    (y,) = exe.run(scope, feed={"x": x}, fetch=["y"])
    assert y.dtype == np.float32 and y.shape == (2, 2)
    np.testing.assert_allclose(y, x @ w, rtol=1e-6)
    np.testing.assert_array_equal(scope.get("y"), y)
    np.testing.assert_array_equal(runtime.fetch(scope, "w"), w)
    assert sorted(scope.names()) == ["w", "x", "y"]
    y[0, 0] = 100  # a copy: the scope keeps its own
    assert scope.get("y")[0, 0] != 100


def test_parameters_load_from_paddles_files(tmp_path):
    program = mul_program()
    assert ctp.persistable_tensor_names(program) == ["w"]
    runtime = ctp.DeviceRuntime("cpu")
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    saver = ctp.ProgramBuilder()
    saver.op("save_combine").input("X", ["w"]).attr("file_path", str(tmp_path / "params"))
    scope = ctp.Scope()
    runtime.bind(scope, "w", w)
    ctp.Executor(saver.build(), runtime).run(scope)
    fresh = ctp.Scope()
    loader = ctp.load_persistables_program(program, file=str(tmp_path / "params"))
    assert [op.type for op in loader.global_block.ops] == ["load_combine"]
    ctp.Executor(loader, runtime).run(fresh)
    np.testing.assert_array_equal(runtime.fetch(fresh, "w"), w)
    x = np.ones((1, 3), dtype=np.float32)
    (y,) = ctp.Executor(program, runtime).run(fresh, feed={"x": x}, fetch=["y"])
    np.testing.assert_allclose(y, x @ w)
    with pytest.raises(ValueError):
        ctp.load_persistables_program(program)
    with pytest.raises(ctp.Error, match="missing"):
        ctp.Executor(ctp.load_persistables_program(program, dir=str(tmp_path / "missing")),
                     runtime).run(ctp.Scope())


def test_random_parameters_are_seeded_and_in_range():
    program = mul_program()
    startup = ctp.random_persistables_program(program, min=-0.5, max=0.5, first_seed=3)
    assert [op.type for op in startup.global_block.ops] == ["uniform_random"]
    runtime = ctp.DeviceRuntime("cpu")
    values = []
    for _ in range(2):
        scope = ctp.Scope()
        ctp.Executor(startup, runtime).run(scope)
        values.append(runtime.fetch(scope, "w"))
    np.testing.assert_array_equal(values[0], values[1])
    assert values[0].shape == (3, 2)
    assert np.all(values[0] >= -0.5) and np.all(values[0] < 0.5)
    assert len(np.unique(values[0])) > 1


def test_sample_mlp_trains_on_one_worker():
    model = ctp.samples.mlp()
    runtime = ctp.DeviceRuntime()
    scope = ctp.Scope()
    ctp.Executor(model.startup, runtime, seed=3).run(scope)
    step = ctp.Executor(model.main, runtime)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=(64, 1)).astype(np.int64)
    features = (np.eye(3, 2)[labels[:, 0]] * 3 + rng.normal(0, 0.3, (64, 2))).astype(np.float32)
    losses = [float(step.run(scope, feed={model.input: features, model.label: labels},
                             fetch=[model.loss])[0][0]) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0], losses


def test_a_long_run_lets_other_python_threads_run():
    # Executor.run releases the GIL while the program runs: another Python
    # thread keeps running inside the call's window. Were the GIL held, that
    # thread could not take a single step between the call's entry and return.
    # One run must be long enough to see into: the product is grown until it
    # takes about 0.25 s on this machine (a faster matmul must not make the
    # test vacuous).
    runtime = ctp.DeviceRuntime("cpu")
    n = 400
    while True:
        scope = ctp.Scope()
        runtime.bind(scope, "w", np.ones((n, n), np.float32))
        exe = ctp.Executor(mul_program(n, n), runtime)
        x = np.ones((n, n), np.float32)
        began = time.perf_counter()
        exe.run(scope, feed={"x": x}, fetch=["y"])
        took = time.perf_counter() - began
        if took >= 0.2 or n >= 4000:
            break
        n = min(4000, int(n * (0.25 / max(took, 1e-3)) ** (1 / 3)) + 1)
    window = {}

    def run_long():
        window["start"] = time.perf_counter()
        exe.run(scope, feed={"x": x}, fetch=["y"])
        window["end"] = time.perf_counter()

    worker = threading.Thread(target=run_long)
    steps = []
    worker.start()
    while worker.is_alive():
        steps.append(time.perf_counter())
        time.sleep(0)  # lets the worker take the GIL back when it wants it
    worker.join()
    start, end = window["start"], window["end"]
    assert end - start > 0.05, f"the runs took {end - start:.3f} s: too short to tell"
    margin = 0.1 * (end - start)
    during = [t for t in steps if start + margin < t < end - margin]
    assert len(during) >= 3, (f"{len(during)} steps of the other thread in the middle of "
                              f"{end - start:.3f} s of runs")


def test_errors_name_their_place():
    program = mul_program()
    program.global_block.append_op(ctp.Op("no_such_op", {"X": ["y"]}, {"Out": ["y"]}))
    with pytest.raises(ctp.Error, match=r"op 1.*no_such_op"):
        ctp.Executor(program, ctp.DeviceRuntime())
    exe = ctp.Executor(mul_program(), ctp.DeviceRuntime())
    with pytest.raises(ctp.Error, match="'w'"):  # never bound
        exe.run(ctp.Scope(), feed={"x": np.zeros((1, 3), np.float32)})
    # A ring set-up's error carries the rank, ring size and ring it joins as.
    ring = ctp.ProgramBuilder()
    ring.data("id", [1])
    ring.op("c_comm_init").input("X", "id").attr("rank", 5).attr("nranks", 2).attr("ring_id", 3)
    runtime = ctp.DeviceRuntime("cpu")
    with pytest.raises(ctp.Error, match=r"rank 5 of 2, ring 3: ") as caught:
        ctp.Executor(ring.build(), runtime, ctp.Communicators(runtime)).run(ctp.Scope())
    place = caught.value.place
    assert (place.block, place.op, place.op_type) == (0, 0, "c_comm_init")
    assert (place.rank, place.nranks, place.ring) == (5, 2, 3)
    assert caught.value.message == "the rank must be in [0, nranks)"
    with pytest.raises(TypeError, match="dtype"):
        exe.run(ctp.Scope(), feed={"x": np.zeros((1, 3), np.complex64)})
    with pytest.raises(ValueError, match="device"):
        ctp.DeviceRuntime("tpu")


def test_gpu_executor():
    if os.environ.get("CTP_CUDA_BUILT") != "ON":
        pytest.skip("ctp was built without CUDA")
    try:
        runtime = ctp.DeviceRuntime("gpu:0")
    except ctp.Error as e:
        pytest.skip(f"no GPU here: {e}")
    scope = ctp.Scope()
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    runtime.bind(scope, "w", w)
    x = np.ones((4, 3), np.float32)
    (y,) = ctp.Executor(mul_program(), runtime).run(scope, feed={"x": x}, fetch=["y"])
    np.testing.assert_allclose(y, x @ w, rtol=1e-6)


def test_worker_identity_reads_only_what_it_is_given():
    identity = ctp.worker_identity({"PADDLE_TRAINER_ID": "1", "PADDLE_TRAINERS_NUM": "2",
                                    "PADDLE_TRAINER_ENDPOINTS": "a:1,b:2"})
    assert (identity.rank, identity.world_size, identity.endpoints) == (1, 2, ["a:1", "b:2"])
    with pytest.raises(ctp.Error, match="PADDLE_TRAINER_ID"):
        ctp.worker_identity({"PADDLE_TRAINER_ID": "x"})


@pytest.mark.parametrize("mode", ["grad_allreduce", "local_sgd"])
def test_two_python_workers_end_with_identical_parameters(ctp_cli, tmp_path, mode):
    trainer = SOURCE_DIR / "samples" / "python_trainer.py"
    run = subprocess.run(
        [ctp_cli, "launch", "--nproc", "2", "--timeout", "60", "--", sys.executable,
         str(trainer), "--mode", mode, "--steps", "20", "--save-params", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "step 20/20 loss" in run.stdout
    model = ctp.samples.mlp()
    for name in model.parameters:
        rank0 = np.load(tmp_path / "rank0" / f"{name}.npy")
        rank1 = np.load(tmp_path / "rank1" / f"{name}.npy")
        np.testing.assert_array_equal(rank0, rank1, err_msg=name)
    # The workers started from different parameters (seed + rank): the
    # transpiled startup's broadcast made them equal, the all-reduce kept them so.
    losses = [float(line.split()[-1]) for line in run.stdout.splitlines() if " loss " in line]
    assert losses[-1] < losses[0], run.stdout
