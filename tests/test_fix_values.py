"""Fixes computed from the user's own values (issue 16 item 3): expressions over the job's resolved config, the
entry's example marked when a value is unknown, and each alternative its own block on every surface."""

from __future__ import annotations

import io
import shlex
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

from kb.corpus import load_corpus
from kb.engine import Diagnoser
from kb.fixexpr import ExprError, evaluate, expr_keys
from kb.fixvalues import JobValues
from kb.render_text import render_result
from server.app import create_app
from server.settings import ServerSettings
from tests.conftest import CORPUS, REPO
from tui.widgets.diagnose.results import copy_text, detail_body, fix_blocks

RUNS = REPO / "tests" / "eval" / "verl_runs"
CLASSIC = (
    "python3 -m verl.trainer.main_ppo data.train_batch_size=8 actor_rollout_ref.actor.ppo_mini_batch_size=16 "
    "actor_rollout_ref.rollout.name=vllm\n"
    "ValueError: train_batch_size (8) must be >= actor.ppo_mini_batch_size (16)\n"
)
MINI = "actor_rollout_ref.actor.ppo_mini_batch_size"


@pytest.fixture(scope="module")
def lexical() -> Diagnoser:
    return Diagnoser(load_corpus(CORPUS))


def _match(result, entry_id):
    return next(m for m in result.matches if m.id == entry_id)


def test_expressions_are_safe_and_small():
    assert expr_keys("ceil(2 * (data.max_prompt_length + data.max_response_length) / a.sp)") == [
        "data.max_prompt_length",
        "data.max_response_length",
        "a.sp",
    ]
    assert evaluate("gcd(a.micro, a.mini * a.n // a.dp)", {"a.micro": 4, "a.mini": 6, "a.n": 1, "a.dp": 1}) == 2
    assert evaluate("x.y + 1", {}) is None  # unknown value: no number
    for bad in ("__import__('os').system('x')", "a.b if c else d", "[1, 2]", "a.b(", "lambda: 1"):
        with pytest.raises(ExprError):
            expr_keys(bad)


def test_job_values_follow_the_input_then_the_release_defaults():
    job = JobValues({"data.train_batch_size": "8"}, "0.9.1")
    assert job.get("data.train_batch_size") == (8.0, "from the input")
    assert job.get("data.max_prompt_length") == (512.0, "verl 0.9.1 default")
    # critic.ppo_mini_batch_size is ${oc.select:actor_rollout_ref.actor.ppo_mini_batch_size,256}
    assert job.get("critic.ppo_mini_batch_size") == (256.0, "verl 0.9.1 default")
    assert JobValues({MINI: "16"}, "0.9.1").get("critic.ppo_mini_batch_size") == (16.0, "from the input")
    assert job.get("actor_rollout_ref.model.path") is None


def test_the_classic_bad_case_never_suggests_the_value_that_failed(lexical):
    result = lexical.diagnose(CLASSIC, semantic=False)
    m = result.matches[0]
    assert m.id == "train-batch-smaller-than-mini-batch"
    assert [o.line for o in m.overrides] == [f"{MINI}=8"]
    assert not m.overrides[0].example and "from the input" in (m.overrides[0].computed or "")
    # the alternatives are their own blocks: raise the train batch, or the critic's mini batch
    assert [[o.line for o in a.overrides] for a in m.alternatives] == [
        ["data.train_batch_size=16"],
        ["critic.ppo_mini_batch_size=8"],
    ]
    for m in result.matches:
        assert f"{MINI}=16" not in [o.line for o in m.overrides]


def test_real_verl_run_train_batch_smaller_than_mini_batch(lexical):
    text = (RUNS / "train_batch_smaller_than_mini_batch" / "output.log").read_text()
    m = _match(lexical.diagnose(text, semantic=False), "train-batch-smaller-than-mini-batch")
    assert [o.line for o in m.overrides] == [f"{MINI}=2"]  # the run set train 2, mini 4
    assert m.alternatives[0].overrides[0].line == "data.train_batch_size=4"


def test_unknown_values_show_the_example_marked(lexical):
    text = "ValueError: train_batch_size (8) must be >= actor.ppo_mini_batch_size (16)\n"
    m = lexical.diagnose(text, semantic=False).matches[0]
    # no overrides in the input: the release's defaults alone (train batch 1024) describe no failing job
    o = m.overrides[0]
    assert o.example and o.computed is None
    assert o.line == f"{MINI}=16"  # the entry's example, marked as one
    buf = io.StringIO()
    render_result(lexical.diagnose(text, semantic=False), Console(file=buf, width=200, color_system=None))
    assert f"{MINI}=16   # verl >=0.4; example value: set it from your config" in buf.getvalue()


def test_token_budget_from_prompt_and_response_lengths_and_sp(lexical):
    text = (
        "python3 -m verl.trainer.main_ppo data.max_prompt_length=4096 data.max_response_length=8192 "
        "actor_rollout_ref.actor.use_dynamic_bsz=True actor_rollout_ref.actor.ulysses_sequence_parallel_size=2\n"
        "AssertionError: max_token_len must be greater than the sequence length. Got max_token_len=16384 and "
        "max_seq_len=12288\n"
    )
    m = _match(lexical.diagnose(text, semantic=False), "dynamic-bsz-max-token-len-too-small")
    lines = {o.key: o.line for o in m.overrides}
    assert lines["actor_rollout_ref.actor.ppo_max_token_len_per_gpu"].endswith("=12288")  # 2 * 12288 / sp 2
    assert lines["actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu"].endswith("=24576")
    assert lines["critic.ppo_max_token_len_per_gpu"].endswith("=49152")  # the critic's own SP is 1
    assert all(not o.example for o in m.overrides)


def test_micro_divides_the_normalized_mini_batch(lexical):
    text = (
        "verl==0.7.0\npython3 -m verl.trainer.main_ppo actor_rollout_ref.actor.ppo_mini_batch_size=12 "
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 actor_rollout_ref.rollout.n=1 "
        "trainer.n_gpus_per_node=2 trainer.nnodes=1\n"
        "AssertionError: normalized ppo_mini_batch_size 6 should be divisible by ppo_micro_batch_size_per_gpu 8\n"
    )
    m = _match(lexical.diagnose(text, semantic=False), "legacy-mini-batch-micro-divisibility")
    assert [o.line for o in m.overrides] == ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2"]  # gcd(8, 6)
    assert [o.line for o in m.alternatives[0].overrides] == [f"{MINI}=16"]  # 16 * 1 // 2 = 8, divisible by 8


def test_alternatives_are_separate_blocks_in_text_tui_and_web(lexical):
    result = lexical.diagnose(CLASSIC, semantic=False)
    m = result.matches[0]
    buf = io.StringIO()
    render_result(result, Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    assert "Or keep the mini batch and raise the train batch to it:" in out
    assert f"  {MINI}=8" in out and "  data.train_batch_size=16" in out

    assert fix_blocks(m)[0][0] == "Fix" and len(fix_blocks(m)) == 3
    assert copy_text(m) == f"{MINI}=8"
    assert copy_text(m, 1) == "data.train_batch_size=16"
    assert copy_text(m, 3) == f"{MINI}=8"  # wraps around
    body = detail_body(m, result, 1).plain
    assert "▶ Or keep the mini batch" in body and "a: next fix" in body
    for line in (copy_text(m, i) for i in range(3)):
        assert len(shlex.split(line)) == 1


@pytest.fixture(scope="module")
def client(lexical: Diagnoser) -> Iterator[TestClient]:
    with TestClient(create_app(ServerSettings(semantic=False), lexical), base_url="http://127.0.0.1") as c:
        yield c


def test_web_gives_each_alternative_its_own_copy_button(client):
    r = client.post("/diagnose", data={"input": CLASSIC}, headers={"accept": "text/html"})
    card = r.text.split('class="match verdict-', 2)[1]
    assert card.count("data-copy-source") == 3
    assert "Or keep the mini batch and raise the train batch to it" in card
    blocks = [part.split("<code>", 1)[1].split("</code>", 1)[0] for part in card.split("data-copy-source")[1:]]
    assert blocks == [f"{MINI}=8", "data.train_batch_size=16", "critic.ppo_mini_batch_size=8"]
    assert "= data.train_batch_size (8, from the input)" in card  # how the value was computed
    twin = client.post("/diagnose", data={"input": CLASSIC}, headers={"accept": "application/json"}).json()
    assert twin["matches"][0]["alternatives"][0]["overrides"][0]["line"] == "data.train_batch_size=16"


def test_critic_path_fixes_are_alternatives_not_one_paste(lexical):
    entry = lexical.entries["critic-model-path-default"]
    assert [o.key for o in entry.meta.fix.overrides] == ["critic.model.path"]
    assert [a.overrides[0].key for a in entry.meta.fix.alternatives] == [
        "algorithm.adv_estimator",
        "actor_rollout_ref.model.path",
    ]


def test_entry_page_and_api_show_alternatives_and_mark_examples(client):
    page = client.get("/entries/train-batch-smaller-than-mini-batch", headers={"accept": "text/html"}).text
    assert '<h3 class="alternative">Or keep the mini batch and raise the train batch to it</h3>' in page
    assert "diagnosing your log computes it as data.train_batch_size" in page
    data = client.get("/v1/entries/train-batch-smaller-than-mini-batch").json()
    assert data["overrides"][0]["example"] is True
    assert data["alternatives"][0]["overrides"][0]["key"] == "data.train_batch_size"
