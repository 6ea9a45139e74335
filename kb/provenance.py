"""Provenance: does the input come from a verl job, from another stack, or does it not say?

A wrong confident answer costs more than none. An NCCL watchdog timeout, a CUDA OOM, a DataLoader bus error
or a missing W&B key reads the same in every framework; an entry about such a failure (``generic: true``) is
claimed only when the input shows verl: its frames and module paths, ``main_ppo``, the ``(TaskRunner pid=…)``
and ``WorkerDict`` prefixes of its Ray actors, its config keys, its step lines. On another stack's input
(TRL, OpenRLHF, DeepSpeed, LLaMA-Factory, vLLM serving, Ray Train, ...) nothing is claimed, and the result says
what the input looks like; a bare paste that says neither keeps verl-specific answers and shows generic ones as
near misses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from kb.entry import Entry
from kb.keysets import key_notes, release_keys, renames
from kb.loglines import Line
from kb.patterns import PatternSet
from kb.result import Match, Provenance, ProvenanceClue
from kb.scoring import NEAR_MISS_BAND, NEAR_MISS_CAP
from kb.signals import Signals
from kb.versions import KNOWN_RELEASES

# Strong signs of verl: what only a verl process prints or runs.
_VERL_STRONG = re.compile(
    r"(?:^|[\s\"'/(=])verl/(?:trainer|workers|utils|single_controller|models|experimental|protocol\.py|"
    r"checkpoint_engine|interactions|tools|third_party|__init__\.py)"
    r"|\bverl\.(?:trainer|workers|utils|single_controller|models|protocol|experimental)\b"
    r"|\b(?:main_ppo|main_generation|main_dapo|fsdp_sft_trainer)\b"
    r"|\bray::(?:TaskRunner|TaskRunnerV1|WorkerDict|main_task)\b"
    r"|\b(?:RayPPOTrainer|ActorRolloutRefWorker|DataParallelPPOActor|DataParallelPPOCritic|RayWorkerGroup|"
    r"FSDPVLLMShardingManager|AgentLoopWorker|DataProto)\b"
    r"|\bactor_rollout_ref[.:]|\balgorithm\.adv_estimator\b|\bdata\.train_batch_size\b|\bcritic\.ppo_\w+"
    r"|\btrainer\.n_gpus_per_node\b|\[validate_config\]|\bverl\.plugin\b"
    # verl's platform manager (0.9) at start-up.
    r"|No supported accelerator detected\. Registered: \("
    r"|Platform '\w+' \(Platform\w+\) is registered but not available"
)
# Ray prefixes of verl's actors, read on the raw line (the cleaned one has them stripped).
_VERL_PREFIX = re.compile(r"\((?:TaskRunner|TaskRunnerV1|WorkerDict|main_task|AgentLoopWorker|vLLMHttpServer) pid=\d+")
# A verl step line: `step:N - actor/...:v - critic/...`.
_VERL_STEP = re.compile(r"\bstep:\d+ - .*\b(?:actor|critic|timing_s|response_length|training)/\w")
# Weak: the input names verl (a question in the user's words, a version line).
_VERL_WORD = re.compile(r"\bverl(?:[^a-z0-9]|$)|volcengine", re.IGNORECASE)
_VERL_WEAK_NAMES = re.compile(r"\b(?:TinyZero|EasyR1|Search-R1|rllm|TTRL)\b")


@dataclass(frozen=True)
class _Stack:
    name: str
    strong: re.Pattern[str]
    weak: re.Pattern[str] | None = None


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


# Another stack's frames, modules and entry points (strong), or its name in prose (weak).
_STACKS: tuple[_Stack, ...] = (
    _Stack(
        "TRL",
        _rx(
            r"[/\\]trl[/\\]|\btrl\.(?:trainer|models|scripts|extras)\b|\bfrom trl import\b|\btrl vllm-serve\b"
            r"|\b(?:GRPOTrainer|GRPOConfig|SFTTrainer|DPOTrainer|RewardTrainer|RLOOTrainer|PPOTrainer)\b"
        ),
        _rx(r"\bTRL\b"),
    ),
    _Stack("OpenRLHF", _rx(r"\bopenrlhf[./\\]|\btrain_ppo_ray\b|\bLLMRayActor\b", re.I), _rx(r"\bopenrlhf\b", re.I)),
    _Stack(
        "DeepSpeed",
        _rx(
            r"[/\\]deepspeed[/\\]|\bdeepspeed\.(?:runtime|launcher|ops|utils|comm)\b|DeepSpeed info: version="
            r"|\bzero_to_fp32\.py\b|\bDeepSpeedEngine\b|^\s*deepspeed\s+\S|\[launch\.py:\d+:main\]|\bds_config\b"
        ),
        _rx(r"\bdeepspeed\b", re.I),
    ),
    _Stack("PyTorch Lightning", _rx(r"\bpytorch_lightning\b|\blightning[/\\.](?:pytorch|fabric)\b|lightning_fabric")),
    _Stack(
        "Hugging Face Trainer / accelerate",
        _rx(r"transformers[/\\]trainer\.py|accelerate[/\\](?:commands|launchers)\b|\baccelerate launch\b"),
    ),
    _Stack(
        "LLaMA-Factory",
        _rx(r"\bllamafactory\b|\bllmtuner\b|LLaMA-Factory[^\s/]*/src|\bllamafactory-cli\b", re.I),
        _rx(r"\bLLaMA[- ]?Factory\b", re.I),
    ),
    _Stack(
        "NeMo",
        _rx(r"\bnemo_rl\b|[/\\]nemo[/\\]|\bnemo\.collections\b|\bnemo_aligner\b|\bVllmGenerationWorker\b"),
        _rx(r"\bNeMo(?:-RL)?\b"),
    ),
    _Stack(
        "Megatron-LM (pretrain scripts)",
        _rx(
            r"\bpretrain_(?:gpt|bert|t5|mamba)\.py\b|\bmegatron[/\\]training[/\\]|\bmegatron\.training\b|Megatron-DeepSpeed"
        ),
    ),
    _Stack("SkyRL", _rx(r"\bskyrl\b|\bAsyncVLLMInferenceEngine\b", re.I), _rx(r"\bSkyRL\b")),
    _Stack("slime", _rx(r"[/\\]slime[/\\]|\bslime\.(?:backends|ray|utils|rollout)\b"), _rx(r"\bslime\b")),
    _Stack(
        "ROLL",
        _rx(r"\broll[/\\](?:pipeline|distributed|third_party|models)\b|\broll\.pipeline\b|\balibaba/ROLL\b"),
        _rx(r"\bROLL\b"),  # upper case: the project's name, not the verb
    ),
    _Stack("Unsloth", _rx(r"\bunsloth(?:_zoo)?[/\\._]|Unsloth:"), _rx(r"\bunsloth\b", re.I)),
    _Stack("torchtune", _rx(r"\btorchtune\b|^\s*tune run\b")),
    _Stack("ms-swift", _rx(r"\bswift (?:sft|rlhf|pt|infer|deploy)\b|[/\\]swift[/\\](?:cli|llm|trainers)[/\\]")),
    _Stack("open-instruct", _rx(r"\bopen_instruct[/\\.]")),
    _Stack("RLinf", _rx(r"\brlinf\b", re.I)),
    _Stack("ChatLearn", _rx(r"\bchatlearn\b", re.I)),
    _Stack("trlx", _rx(r"\btrlx\b")),
    _Stack("LMFlow", _rx(r"\blmflow\b", re.I)),
    _Stack("lmdeploy", _rx(r"\blmdeploy\b")),
    _Stack("MLX", _rx(r"\bmlx(?:_lm|_vlm)?[/\\.]|\bmlx-(?:lm|vlm)\b")),
    _Stack(
        "vLLM serving",
        _rx(r"\bvllm serve\b|\bvllm\.entrypoints\.(?:openai\.)?api_server\b|vLLM API server version|\bvllm_serve\b"),
    ),
    _Stack("SGLang serving", _rx(r"\bsglang\.launch_server\b|\blaunch_server\.py\b|\bsglang\.bench_")),
    _Stack(
        "Ray Train/Tune/Serve",
        _rx(r"\bray[/\\](?:train|tune|serve)[/\\]|\bray\.(?:train|tune|serve)\b|\bTorchTrainer\b|Trial task failed"),
    ),
    _Stack(
        "a torchrun script",
        _rx(r"torch[/\\]distributed[/\\]run\.py|\btorch\.distributed\.elastic\b|^\s*torchrun\s|ChildFailedError"),
    ),
)
# A dotted key as Hydra quotes it ('trainer.val_before_train', full_key: x.y) or a command line passes it (x.y=v).
_KEY_TOKEN = re.compile(r"(?:'|full_key: |(?<![\w.]))\+{0,2}([A-Za-z_]\w*(?:\.\w+)+)(?='|=|\s*$)")


@lru_cache(maxsize=1)
def _verl_keys() -> frozenset[str]:
    """Every key some verl release's config (FSDP's or Megatron's) carries, reads with '+', or renamed."""
    keys: set[str] = set()
    for release in KNOWN_RELEASES:
        keys.update(release_keys(release, "ppo_trainer"))
        keys.update(release_keys(release, "ppo_megatron_trainer"))
    notes = key_notes()
    keys.update(str(n["key"]) for n in notes.get("plus_keys", []))
    for r in renames():
        keys.update((r.old, r.new))
    return frozenset(k for k in keys if "." in k and k not in _AMBIGUOUS_KEYS and not k.startswith("skip."))


#: verl keys that another Hydra app may have too (a Lightning template's trainer.logger): no evidence alone.
_AMBIGUOUS_KEYS = frozenset(
    [
        "data.seed",
        "data.shuffle",
        "data.tokenizer",
        "data.truncation",
        "data.cache_dir",
        "data.sampler",
        "data.image_key",
        "data.val_batch_size",
        "data.train_files",
        "data.val_files",
        "trainer.device",
        "trainer.logger",
        "trainer.n_gpus",
        "trainer.total_epochs",
        "trainer.project_name",
        "trainer.experiment_name",
        "trainer.resume_mode",
    ]
)


#: verl's own config groups: a key under one of them is verl's even when misspelt ('reward_model.x').
_VERL_GROUPS = ("actor_rollout_ref.", "reward_model.", "ray_kwargs.", "ray_init.", "custom_reward_function.")


def _verl_key_in(text: str) -> re.Match[str] | None:
    if "." not in text or not ("=" in text or "'" in text or "full_key" in text):
        return None
    for m in _KEY_TOKEN.finditer(text):
        if m.group(1) in _verl_keys() or m.group(1).startswith(_VERL_GROUPS):
            return m
    return None


def _source(p: re.Pattern[str]) -> str:
    return ("(?i)" if p.flags & re.IGNORECASE else "") + p.pattern


@lru_cache(maxsize=1)
def _pattern_set() -> tuple[PatternSet, tuple[tuple[str, str], ...]]:
    """Every provenance pattern in one linear-time set (the symptoms' engine): one pass over the input.
    Returns the set and, per pattern, its (kind, stack): kind is verl, verl_weak, strong or weak."""
    owners: list[tuple[str, str]] = []
    patterns: list[str] = []
    for kind, rx in (
        ("verl", _VERL_STRONG),
        ("verl", _VERL_STEP),
        ("verl_weak", _VERL_WORD),
        ("verl_weak", _VERL_WEAK_NAMES),
    ):
        patterns.append(_source(rx))
        owners.append((kind, "verl"))
    for st in _STACKS:
        patterns.append(_source(st.strong))
        owners.append(("strong", st.name))
        if st.weak is not None:
            patterns.append(_source(st.weak))
            owners.append(("weak", st.name))
    return PatternSet(patterns), tuple(owners)


# Other stacks' Ray actors, on the raw line: the prefix is all that names them.
_FOREIGN_ACTORS = {
    "RolloutManager": "slime",
    "MegatronActor": "RLinf",
    "LLMRayActor": "OpenRLHF",
    "VllmGenerationWorker": "NeMo",
    "AsyncVLLMInferenceEngine": "SkyRL",
}
_FOREIGN_PREFIX = re.compile(r"\((" + "|".join(_FOREIGN_ACTORS) + r") pid=\d+")

_ENTRY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+, in <module>')
_NOT_A_PROGRAM = ("<stdin>", "<string>", "runpy.py", "<frozen")


def _clue(line: Line, start: int, end: int) -> ProvenanceClue:
    text = line.text.strip()
    if len(text) > 200:
        lo = max(0, start - 60)
        text = line.text[lo : lo + 200].strip()
    return ProvenanceClue(text=text, line_no=line.no)


def assess(lines: Sequence[Line], signals: Signals) -> Provenance:
    """What the input looks like: a verl job, another stack (named), or no telling."""
    verl_strong: list[ProvenanceClue] = []
    verl_weak: list[ProvenanceClue] = []
    strong: dict[str, list[ProvenanceClue]] = {}
    weak: dict[str, list[ProvenanceClue]] = {}
    entry: ProvenanceClue | None = None
    by_no = {ln.no: ln for ln in lines}
    pset, owners = _pattern_set()
    kinds: dict[int, dict[str, tuple[str, ProvenanceClue]]] = {}
    for m in pset.match_lines([ln.text for ln in lines], first_line_no=lines[0].no if lines else 1):
        kind, name = owners[m.pattern_id]
        kinds.setdefault(m.line_no, {}).setdefault(kind, (name, _clue(by_no[m.line_no], m.start, m.end)))
    for line in lines:
        found = kinds.get(line.no, {})
        if "verl" not in found:
            km = _verl_key_in(line.text)
            if km is not None:
                found["verl"] = ("verl", _clue(line, km.start(), km.end()))
            elif line.raw != line.text and _VERL_PREFIX.search(line.raw):
                found["verl"] = ("verl", _clue(line, 0, 0))
        if "strong" not in found and line.raw != line.text and (fp := _FOREIGN_PREFIX.search(line.raw)):
            found["strong"] = (_FOREIGN_ACTORS[fp.group(1)], ProvenanceClue(text=fp.group(0), line_no=line.no))
        if "verl" in found:
            verl_strong.append(found["verl"][1])
        elif "verl_weak" in found:
            verl_weak.append(found["verl_weak"][1])
        if "strong" in found:
            strong.setdefault(found["strong"][0], []).append(found["strong"][1])
        elif "weak" in found:
            weak.setdefault(found["weak"][0], []).append(found["weak"][1])
        fm = _ENTRY_FRAME.match(line.text) if entry is None and "File" in line.text else None
        if fm is not None and not any(x in fm["path"] for x in _NOT_A_PROGRAM):
            entry = _clue(line, 0, 0)
    if "verl" in signals.versions and not verl_strong:
        verl_strong.append(ProvenanceClue(text=f"verl {signals.versions['verl']}"))
    if (
        any(k.startswith(("actor_rollout_ref.", "algorithm.", "critic.")) for k in signals.overrides)
        and not verl_strong
    ):
        verl_strong.append(ProvenanceClue(text="verl config keys among the job's overrides"))

    foreign = max(strong.items(), key=lambda kv: len(kv[1]), default=None)
    if verl_strong and (foreign is None or len(verl_strong) >= len(foreign[1])):
        return _verl(verl_strong)
    if foreign is not None:
        return _foreign(foreign[0], foreign[1])
    foreign_weak = max(weak.items(), key=lambda kv: len(kv[1]), default=None)
    if verl_weak and foreign_weak is None:
        return _verl(verl_weak)
    if foreign_weak is not None and not verl_weak:
        return _foreign(foreign_weak[0], foreign_weak[1])
    if entry is not None and not verl_weak:
        # A traceback of some program with no verl in it: maybe a user's script around verl's output (an eval
        # script loading a verl checkpoint), so only the generic entries are held back.
        name = entry.text.split('"')[1].replace("\\", "/").rsplit("/", 1)[-1] if '"' in entry.text else "a script"
        return Provenance(
            stack=f"a Python program ({name})",
            verl=None,
            evidence=[entry],
            summary=f"This traceback comes from {name}, with no sign of a verl job: "
            "answers about failures any stack can hit are shown as near misses.",
        )
    return Provenance(
        stack="unknown",
        verl=None,
        evidence=[],
        summary="Nothing in this input says it comes from a verl job; "
        "answers about failures any stack can hit are shown as near misses.",
    )


def _verl(clues: list[ProvenanceClue]) -> Provenance:
    return Provenance(stack="verl", verl=True, evidence=clues[:3], summary="This input comes from a verl job.")


def _foreign(name: str, clues: list[ProvenanceClue]) -> Provenance:
    first = clues[0]
    where = f"line {first.line_no}: " if first.line_no else ""
    text = first.text if len(first.text) <= 90 else first.text[:87] + "..."
    return Provenance(
        stack=name,
        verl=False,
        evidence=clues[:3],
        summary=f"This input comes from {name} ({where}{text}), not verl: verl entries are shown as near misses only.",
    )


def apply(
    matches: list[Match], provenance: Provenance, entries: dict[str, Entry], match_threshold: float
) -> set[str]:
    """Hold back what provenance does not support: on another stack every entry, on an input that does not
    say, the generic ones, become near misses (confidence squeezed below ``match_threshold``, order kept).
    Returns the ids held back (a calibration applied later keeps them near misses)."""
    held: set[str] = set()
    for m in matches:
        entry = entries.get(m.id)
        generic = entry is not None and entry.meta.generic
        if provenance.verl is True or (provenance.verl is None and not generic):
            continue
        held.add(m.id)
        if m.confidence > NEAR_MISS_CAP:
            # Squeeze [cap, 1] into [cap - band, cap]: below a match, and the order among them kept.
            m.confidence = round(NEAR_MISS_CAP - NEAR_MISS_BAND * (1 - m.confidence) / (1 - NEAR_MISS_CAP), 3)
        m.verdict = "match" if m.confidence >= match_threshold else "possible"
    return held


def note(provenance: Provenance, matches: list[Match], entries: dict[str, Entry]) -> str | None:
    """The line every surface shows when provenance held an answer back."""
    if provenance.verl is False:
        return provenance.summary
    if provenance.verl is None and any(m.id in entries and entries[m.id].meta.generic for m in matches):
        return provenance.summary
    return None
