"""Run verl's OWN start-up validation over generated configs; run INSIDE a venv that has that verl.

usage: <venv>/bin/python scripts/preflight_oracle/run_release.py --out FILE [--seed N] [--limit N]

What runs for each case (nothing here re-implements a check; every verdict is what verl did):

1. stage "hydra": ``hydra.compose("ppo_trainer", overrides)`` on the installed wheel's
   ``verl/trainer/config`` (one Hydra initialisation per process), as ``@hydra.main`` in
   ``verl.trainer.main_ppo`` would compose it.
2. stage "main": the statements of verl's own ``main_ppo.main`` before the first one that calls
   ``run_ppo`` (i.e. before Ray starts), taken from the installed source with ``ast`` and executed
   in main_ppo's globals. From 0.9.0 on this includes ``validate_config`` (stage "validate_config").
3. releases < 0.9.0 validate inside ``TaskRunner.run`` (a Ray actor): the statements of verl's own
   ``TaskRunner.run`` are executed in-process (unwrapped Ray class, no Ray started) up to and
   including the statement that calls ``validate_config`` (0.6.0 - 0.8.0), or, for 0.4.x / 0.5.0,
   up to ``trainer.init_workers()``: there ``RayPPOTrainer.__init__`` runs for real (stage
   "trainer_init", its checks before ``_validate_config``; then stage "validate_config"), with the
   tokenizer / processor / reward manager / datasets replaced by ``None`` because they need real
   files, and ``_create_dataloader`` (which runs after ``_validate_config``) made a no-op.
   Everything else in those statements is stage "task_runner".

A case whose only failure is a module this CPU venv lacks (ImportError) is not a verdict about the
config; it is left out of the fixture and counted on stderr (see the README).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import inspect
import io
import json
import os
import sys
import textwrap
import time
import types
import warnings
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from generate import CRITIC_MODEL, Case, generate  # noqa: E402
from make_model import make as make_model  # noqa: E402

STUBBED_NAMES = ("copy_to_local", "hf_tokenizer", "hf_processor", "load_reward_manager", "create_rl_dataset",
                 "create_rl_sampler")


class StageError(Exception):
    def __init__(self, stage: str, exc: BaseException) -> None:
        super().__init__(stage)
        self.stage = stage
        self.exc = exc


def _calls(node: ast.AST, name: str) -> bool:
    """Does ``node`` contain a call of ``name`` (a bare name or an attribute)?"""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                return True
    return False


def _function_ast(fn: Callable[..., Any]) -> tuple[ast.FunctionDef, str]:
    fn = inspect.unwrap(fn)
    lines, start = inspect.getsourcelines(fn)
    mod = ast.parse(textwrap.dedent("".join(lines)))
    # keep the file's own line numbers, so tracebacks (and raised_at) point at verl's source lines
    ast.increment_lineno(mod, start - 1)
    node = mod.body[0]
    assert isinstance(node, ast.FunctionDef), type(node)
    node.decorator_list = []
    return node, inspect.getsourcefile(fn) or "<verl>"


def _compile(node: ast.FunctionDef, filename: str, globs: dict[str, Any]) -> Callable[..., Any]:
    mod = ast.Module(body=[node], type_ignores=[])
    ast.fix_missing_locations(mod)
    ns: dict[str, Any] = {}
    exec(compile(mod, filename, "exec"), globs, ns)
    return ns[node.name]


def truncated_main(main_ppo: types.ModuleType) -> Callable[[Any], Any]:
    """verl's main() up to (not including) the first statement that calls run_ppo; returns config."""
    node, filename = _function_ast(main_ppo.main)
    body: list[ast.stmt] = []
    for stmt in node.body:
        if _calls(stmt, "run_ppo"):
            break
        body.append(stmt)
    arg = node.args.args[0].arg
    body.append(ast.Return(value=ast.Name(id=arg, ctx=ast.Load())))
    node.body = body
    node.name = "_verl_main_before_ray"
    return _compile(node, filename, main_ppo.__dict__)


class _Strip(ast.NodeTransformer):
    """Drop the local imports of the names that are replaced by None (they need real files)."""

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        keep = [a for a in node.names if (a.asname or a.name) not in STUBBED_NAMES]
        if not keep:
            return ast.Pass()
        node.names = keep
        return node


def truncated_run(main_ppo: types.ModuleType, runner_cls: type) -> tuple[Callable[..., Any], bool]:
    """TaskRunner.run up to validation. Returns (function, uses_trainer_init)."""
    node, filename = _function_ast(runner_cls.run)
    body: list[ast.stmt] = []
    trainer_init = False
    for stmt in node.body:
        if _calls(stmt, "validate_config"):
            body.append(stmt)
            break
        if _calls(stmt, "init_workers"):
            trainer_init = True
            break
        body.append(stmt)
    else:
        raise SystemExit("TaskRunner.run has neither validate_config nor init_workers: unknown release layout")
    node.body = body
    node.name = "_verl_taskrunner_run_before_workers"
    node = _Strip().visit(node)
    globs = dict(main_ppo.__dict__)
    if trainer_init:
        from verl.trainer.ppo import ray_trainer

        class ProbeTrainer(ray_trainer.RayPPOTrainer):  # type: ignore[misc, valid-type]
            # runs after _validate_config in __init__ and needs the real datasets
            def _create_dataloader(self, *args: Any, **kwargs: Any) -> None:
                return None

        globs["RayPPOTrainer"] = ProbeTrainer
        for name in STUBBED_NAMES:
            globs[name] = lambda *a, **k: None
    return _compile(node, filename, globs), trainer_init


def unwrap_ray_class(cls: Any) -> type:
    meta = getattr(cls, "__ray_metadata__", None)
    if meta is not None:
        return meta.modified_class  # type: ignore[no-any-return]
    return cls  # type: ignore[no-any-return]


def placeholder_missing_worker_modules() -> list[str]:
    """Megatron worker modules import Megatron-LM, which a CPU venv lacks. TaskRunner only puts their
    classes into its role mapping before validation, so empty classes stand in (documented)."""
    done = []
    for modname, classes in (
        ("verl.workers.megatron_workers",
         ("ActorRolloutRefWorker", "AsyncActorRolloutRefWorker", "CriticWorker", "RewardModelWorker")),
        ("verl.single_controller.ray.megatron", ("NVMegatronRayWorkerGroup",)),
    ):
        try:
            importlib.import_module(modname)
        except ImportError:
            m = types.ModuleType(modname)
            for c in classes:
                setattr(m, c, type(c, (), {"__module__": modname}))
            sys.modules[modname] = m
            done.append(modname)
    # 0.4.x TaskRunner.run imports verl.utils.vllm_utils (which imports vLLM) whenever
    # rollout.name is vllm, and calls its is_version_ge only when lora_rank > 0 (never generated).
    # The stand-in raises ImportError if called, so such a case would be skipped, never faked.
    try:
        importlib.import_module("verl.utils.vllm_utils")
    except ImportError:
        m = types.ModuleType("verl.utils.vllm_utils")

        def is_version_ge(*args: Any, **kwargs: Any) -> bool:
            raise ImportError("vLLM is not installed in this CPU venv")

        m.is_version_ge = is_version_ge  # type: ignore[attr-defined]
        sys.modules["verl.utils.vllm_utils"] = m
        done.append("verl.utils.vllm_utils")
    return done


def raised_at(exc: BaseException) -> str | None:
    """'verl/<file>:<line>: <source line>' of the innermost verl frame that raised ``exc`` (or of the
    exception it wraps): a bare ``assert`` has an empty message, and this says which one it was."""
    import linecache

    pkg_root = os.path.dirname(os.path.dirname(sys.modules["verl"].__file__ or ""))
    found = None
    e: BaseException | None = exc
    seen = 0
    # walk into the wrapped exceptions (Hydra's instantiate wraps __post_init__ errors): the
    # innermost verl frame of the innermost exception that has one wins
    while e is not None and seen < 10:
        seen += 1
        tb = e.__traceback__
        while tb is not None:
            fn = tb.tb_frame.f_code.co_filename
            if fn.startswith(os.path.join(pkg_root, "verl") + os.sep) and os.path.exists(fn):
                found = (os.path.relpath(fn, pkg_root), tb.tb_lineno)
            tb = tb.tb_next
        e = e.__cause__ or e.__context__
    if found is None:
        return None
    code = linecache.getline(os.path.join(pkg_root, found[0]), found[1]).strip()
    return f"{found[0]}:{found[1]}: {code}"[:300]


def stage_of(exc: BaseException, default: str) -> str:
    tb = exc.__traceback__
    names = []
    while tb is not None:
        co = tb.tb_frame.f_code
        names.append((co.co_name, co.co_filename))
        tb = tb.tb_next
    if any(n in ("validate_config", "_validate_config") for n, _ in names):
        return "validate_config"
    if any(n == "__init__" and f.endswith(os.path.join("ppo", "ray_trainer.py")) for n, f in names):
        return "trainer_init"
    return default


def cache_yaml_parsing() -> None:
    """Hydra re-reads and re-parses every YAML file of the config tree on each compose(); the parse
    dominates the run time. Memoise PyYAML's result per file text (a deep copy is handed out each
    time), so compose() builds the very same config from the very same data, only faster."""
    import copy

    import omegaconf.omegaconf as oc_mod
    import yaml

    memo: dict[tuple[str, str], Any] = {}

    class _YamlShim:
        def __getattr__(self, name: str) -> Any:
            return getattr(yaml, name)

        @staticmethod
        def load(stream: Any, Loader: type) -> Any:
            text = stream if isinstance(stream, str) else stream.read()
            # omegaconf builds a new (identical) loader class on every call: key on its name
            key = (text, Loader.__qualname__)
            if key not in memo:
                memo[key] = yaml.load(text, Loader=Loader)
            return copy.deepcopy(memo[key])

    oc_mod.yaml = _YamlShim()  # type: ignore[assignment]


def _validation_prints_mark(main_ppo: types.ModuleType) -> bool:
    """Does this release's validation end by printing PASSED_MARK?"""
    srcs = []
    vc = getattr(main_ppo, "validate_config", None)
    if vc is not None:
        srcs.append(inspect.getsource(vc))
    else:
        # 0.4.x / 0.5.0 validate in RayPPOTrainer (0.9.x's ray_trainer needs modules main() does not)
        from verl.trainer.ppo import ray_trainer

        if hasattr(ray_trainer.RayPPOTrainer, "_validate_config"):
            srcs.append(inspect.getsource(ray_trainer.RayPPOTrainer._validate_config))
    return any(PASSED_MARK in s for s in srcs)


def flat_keys(cfg: Any) -> set[str]:
    from omegaconf import OmegaConf

    out: set[str] = set()

    def rec(x: Any, p: str) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                q = f"{p}.{k}" if p else str(k)
                out.add(q)
                rec(v, q)

    rec(OmegaConf.to_container(cfg, resolve=False, throw_on_missing=False), "")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="fixture file to write (jsonl)")
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--limit", type=int, default=0, help="only the first N cases (debugging)")
    args = ap.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.pop("HYDRA_FULL_ERROR", None)
    warnings.filterwarnings("ignore")

    import hydra
    import omegaconf
    import torch
    import verl
    from hydra import compose, initialize_config_dir

    release = getattr(verl, "__version__", None) or importlib.metadata.version("verl")
    t0 = time.time()
    if not os.path.exists(os.path.join(CRITIC_MODEL, "config.json")):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            make_model(CRITIC_MODEL)
    with contextlib.redirect_stdout(io.StringIO()):
        import verl.trainer.main_ppo as main_ppo
    stubbed = placeholder_missing_worker_modules()
    before_ray = truncated_main(main_ppo)
    runner_cls = None
    run_fn = None
    uses_trainer_init = False
    src_main = inspect.getsource(inspect.unwrap(main_ppo.main))
    if "validate_config(" not in src_main:
        runner_cls = unwrap_ray_class(main_ppo.TaskRunner)
        run_fn, uses_trainer_init = truncated_run(main_ppo, runner_cls)

    expect_mark = _validation_prints_mark(main_ppo)
    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    cache_yaml_parsing()
    initialize_config_dir(config_dir=config_dir, version_base=None)
    keys = flat_keys(compose("ppo_trainer", overrides=[]))
    cases: list[Case] = generate(release, keys, seed=args.seed)
    if args.limit:
        cases = cases[: args.limit]
    where = "main()" if run_fn is None else "TaskRunner.run"
    if uses_trainer_init:
        where += " + RayPPOTrainer.__init__"
    print(f"verl {release}: {len(cases)} cases; torch {torch.__version__}, hydra {hydra.__version__}, "
          f"omegaconf {omegaconf.__version__}; validation in {where}"
          f"; placeholders for {stubbed or 'nothing'}; import {time.time() - t0:.1f}s", file=sys.stderr)

    written = skipped = 0
    t1 = time.time()
    with open(args.out, "w", encoding="utf-8") as fh:
        for case in cases:
            rec: dict[str, Any] = {"id": case.id, "release": release, "overrides": case.overrides,
                                   "kind": case.kind, "verdict": "starts", "stage": None,
                                   "exception": None, "message": None}
            try:
                err = run_case(case, compose, before_ray, runner_cls, run_fn, expect_mark)
            except KeyboardInterrupt:
                raise
            if err is not None:
                exc = err.exc
                if isinstance(exc, ImportError):
                    skipped += 1
                    print(f"skip {case.id}: environment {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
                    continue
                rec.update(verdict="fails", stage=err.stage, exception=type(exc).__name__,
                           message=str(exc)[:600], raised_at=raised_at(exc))
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            written += 1
    print(f"verl {release}: wrote {written} lines, skipped {skipped}, {time.time() - t1:.1f}s", file=sys.stderr)
    return 0


PASSED_MARK = "All configuration checks passed"


def run_case(case: Case, compose: Callable[..., Any], before_ray: Callable[[Any], Any],
             runner_cls: type | None, run_fn: Callable[..., Any] | None, expect_mark: bool) -> StageError | None:
    sink = io.StringIO()
    err = _run_case(case, compose, before_ray, runner_cls, run_fn, sink)
    # a "starts" must have gone through verl's validation, not around it: every release that
    # prints this line at the end of its validation must have printed it
    if err is None and expect_mark and PASSED_MARK not in sink.getvalue():
        raise SystemExit(f"{case.id}: no error and no '{PASSED_MARK}' line: validation was not reached")
    return err


def _run_case(case: Case, compose: Callable[..., Any], before_ray: Callable[[Any], Any],
              runner_cls: type | None, run_fn: Callable[..., Any] | None, sink: io.StringIO) -> StageError | None:
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        try:
            cfg = compose("ppo_trainer", overrides=list(case.overrides))
        except Exception as exc:  # any composition error is Hydra's verdict
            return StageError("hydra", exc)
        try:
            cfg = before_ray(cfg)
        except Exception as exc:
            return StageError(stage_of(exc, "main"), exc)
        if runner_cls is None or run_fn is None:
            return None
        try:
            runner = runner_cls()
            run_fn(runner, cfg)
        except Exception as exc:
            return StageError(stage_of(exc, "task_runner"), exc)
    return None


if __name__ == "__main__":
    sys.exit(main())
