"""`verl-doctor ask`: answers composed from entries, multi-turn facts, abstention, and the optional LLM
(against a real OpenAI-compatible server process, tests/llm_server.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kb.ask import ChatMessage, ask, extract_facts, is_followup
from kb.evaluation import load_cases, run_ask_eval
from kb.llm import Grounding, LLMClient, check_reply, override_tokens, quoted_lines
from tests.conftest import REPO
from tests.llm_harness import llm_server

QUESTIONS = REPO / "tests" / "eval" / "questions"
RAY_CPUS = "how do I limit the number of CPUs ray uses in a new verl release? ray_init.num_cpus gets rejected"
HYDRA_TRACE = (
    "Could not override 'ray_init.num_cpus'.\nTo append to your config use +ray_init.num_cpus=16\n"
    "Key 'ray_init' is not in struct\n    full_key: ray_init\n    object_type=dict"
)


def user(*turns: str) -> list[ChatMessage]:
    return [ChatMessage(role="user", content=t) for t in turns]


# --------------------------------------------------------------------------- pieces without the model


def test_facts_from_every_turn_later_wins() -> None:
    facts, _ = extract_facts(["we use verl==0.4.1 on a GH200", "rollout.n is 5", "I'm on 0.5 now"])
    assert facts.verl_version == "0.5"
    assert facts.gpu == "GH200" and facts.platform == "aarch64"
    assert facts.overrides["rollout.n"] == "5"
    facts, _ = extract_facts(["and on arm64?"], verl_version="0.9.1")
    assert facts.platform == "aarch64" and facts.verl_version == "0.9.1"
    facts, _ = extract_facts(["I have 2.5 GB free and vllm 0.8.5"])
    assert facts.verl_version is None and facts.versions.get("vllm") == "0.8.5"


@pytest.mark.parametrize(
    ("text", "followup"),
    [
        ("and on arm64?", True),
        ("I'm on 0.5", True),
        ("what about verl 0.7?", True),
        ("and what about the wandb proxy?", False),
        ("how do I set a proxy for wandb", False),
    ],
)
def test_followup_detection(text: str, followup: bool) -> None:
    assert is_followup(text) is followup


def test_reply_check_tokens_and_quotes() -> None:
    grounding = Grounding(["Set `actor_rollout_ref.rollout.gpu_memory_utilization=0.6`.", "ValueError: bad batch"])
    assert override_tokens("use a.b=1, then +c_d.e='x y'.") == ["a.b=1", "+c_d.e='x y'"]
    assert check_reply("Set actor_rollout_ref.rollout.gpu_memory_utilization=0.6 [x]", grounding) == []
    assert check_reply("Set gpu_memory_utilization=0.6", grounding) == []  # a shortened key invents nothing
    assert check_reply("Set gpu_memory_utilization=0.5", grounding)  # another value does
    assert check_reply("Also `trainer.fake_key=1`", grounding)
    assert check_reply("```\nValueError: bad batch\n```", grounding) == []
    assert check_reply("```\nValueError: a line nobody printed\n```", grounding)
    assert check_reply("> RuntimeError: invented\n", grounding)
    assert quoted_lines("say `ValueError: bad batch size here` and `x`") == ["ValueError: bad batch size here"]


# --------------------------------------------------------------------------- answers from the knowledge base


def test_question_answer_cites_and_composes(diagnoser) -> None:
    a = ask(diagnoser, user("How do train/mini/micro batch sizes relate when rollout.n is 5?"))
    assert not a.abstained
    assert a.citations[0].id == "batch-size-train-mini-micro"
    assert a.citations[0].path.startswith("corpus/config/") and a.citations[0].links
    text = a.answer
    assert "[batch-size-train-mini-micro]" in text and "Why it happens" in text
    assert "actor_rollout_ref.actor.ppo_mini_batch_size=64" in text
    assert "Check that it worked" in text
    # "rollout.n is 5" answers the entry's condition on actor_rollout_ref.rollout.n
    assert a.conditions and a.conditions[0].status == "holds"


def test_unknown_version_is_asked_for_and_follow_up_renders_it(diagnoser) -> None:
    first = ask(diagnoser, user(RAY_CPUS))
    assert first.citations[0].id == "ray-init-num-cpus-renamed"
    assert any("verl version" in q for q in first.missing_facts)
    assert "On verl >=0.6" in first.answer and "ray_init.num_cpus=16" in first.answer
    msgs = [*user(RAY_CPUS), ChatMessage(role="assistant", content=first.answer), *user("I'm on 0.5")]
    second = ask(diagnoser, msgs)
    assert second.followup and second.citations[0].id == "ray-init-num-cpus-renamed"
    assert second.facts.verl_version == "0.5"
    lines = [o.line for o in second.overrides]
    assert "ray_init.num_cpus=16" in lines and not any(x.startswith("ray_kwargs") for x in lines)
    assert "Fix for verl 0.5" in second.answer
    assert not any("verl version" in q for q in second.missing_facts)


def test_arm64_follow_up_settles_the_platform_condition(diagnoser) -> None:
    msgs = user("TensorDict does not support membership checks with the in keyword, what now?", "and on arm64?")
    a = ask(diagnoser, msgs)
    assert a.followup and a.citations[0].id == "tensordict-arm64-membership"
    platform = next(c for c in a.conditions if "arm64" in c.text)
    assert platform.status == "holds"
    assert not any("architecture" in q for q in a.missing_facts)


def test_a_follow_up_after_the_answer_says_what_changed_instead_of_repeating_it(diagnoser) -> None:
    first = ask(diagnoser, user(RAY_CPUS))
    assert "**Why it happens.**" in first.answer and "**Check that it worked.**" in first.answer
    msgs = [*user(RAY_CPUS), ChatMessage(role="assistant", content=first.answer), *user("I'm on 0.5")]
    second = ask(diagnoser, msgs)
    assert second.followup and second.citations[0].id == "ray-init-num-cpus-renamed"
    text = second.answer
    assert "**Why it happens.**" not in text and "**Check that it worked.**" not in text  # said above already
    assert "- verl version: 0.5 (not given before)" in text
    fix = text.split("Fix for verl 0.5", 1)[1]
    assert "ray_init.num_cpus=16" in fix and "ray_kwargs.ray_init" not in fix
    assert len(text) < len(first.answer) / 2
    # The structured answer stays whole: a client that shows fields has everything.
    assert second.conditions and "ray_init.num_cpus=16" in [o.line for o in second.overrides]
    # Without the earlier answer in the conversation (nobody saw it), the follow-up is answered in full.
    whole = ask(diagnoser, user(RAY_CPUS, "I'm on 0.5"))
    assert whole.followup and "**Why it happens.**" in whole.answer


def test_a_follow_up_names_the_condition_its_fact_settles(diagnoser) -> None:
    question = "TensorDict does not support membership checks with the in keyword, what now?"
    first = ask(diagnoser, user(question))
    platform = next(c for c in first.conditions if "arm64" in c.text)
    assert platform.status == "unknown"
    msgs = [*user(question), ChatMessage(role="assistant", content=first.answer), *user("and on arm64?")]
    text = ask(diagnoser, msgs).answer
    assert "- platform: aarch64 (not given before)" in text
    assert f"- {platform.text} — now yes (was unknown)" in text
    assert "**Why it happens.**" not in text


def test_a_follow_up_that_changes_nothing_says_so(diagnoser) -> None:
    first = ask(diagnoser, user(RAY_CPUS, "I'm on 0.5"))
    msgs = [*user(RAY_CPUS, "I'm on 0.5"), ChatMessage(role="assistant", content=first.answer), *user("ok, and?")]
    again = ask(diagnoser, msgs)
    assert again.followup and "Nothing in your last message changes the answer above" in again.answer
    assert "**Why it happens.**" not in again.answer


def test_new_topic_is_not_taken_for_a_follow_up(diagnoser) -> None:
    a = ask(diagnoser, user(RAY_CPUS, "how do I pass a proxy to wandb only, not to the whole job?"))
    assert not a.followup and a.citations[0].id == "wandb-proxy"


def test_traceback_goes_through_the_rules(diagnoser) -> None:
    a = ask(diagnoser, user(HYDRA_TRACE + "\nverl==0.9.1"))
    assert a.citations[0].id == "ray-init-num-cpus-renamed" and a.citations[0].verdict == "match"
    assert a.overrides[0].line == "ray_kwargs.ray_init.num_cpus=16"


def test_nothing_fits_abstains_and_lists_the_closest(diagnoser) -> None:
    a = ask(diagnoser, user("how do I bake sourdough bread at home?"))
    assert a.abstained and not a.citations
    assert a.answer.startswith("I don't know a problem")
    b = ask(diagnoser, user("my training is weird"))
    assert b.abstained or b.citations  # never an answer without a citation
    if b.abstained:
        assert "closest" in b.answer.lower() or "No entry comes close" in b.answer


def test_bad_requests(diagnoser) -> None:
    with pytest.raises(ValueError, match="no user message"):
        ask(diagnoser, [ChatMessage(role="assistant", content="hi")])
    with pytest.raises(ValueError, match="not a version"):
        ask(diagnoser, user("how do I set num_cpus"), verl_version="banana")
    parts = ChatMessage.model_validate({"role": "user", "content": [{"type": "text", "text": "hello"}]})
    assert parts.content == "hello"


# --------------------------------------------------------------------------- the question set


def test_question_set_targets(diagnoser) -> None:
    cases = load_cases([QUESTIONS])
    positives = [c for c in cases if c.expected]
    assert len(positives) >= 40
    report = run_ask_eval(diagnoser, cases)
    r = report.report
    assert not r.unknown_ids, r.unknown_ids
    summary = f"top1={r.top1:.3f} top3={r.top3:.3f} misses={[(m.case, m.got[:1]) for m in r.misses]}"
    assert r.top1 >= 0.85, summary
    assert r.top3 >= 0.95, summary
    assert report.cited_or_abstained == 1.0
    assert r.negatives_confident == 0.0, summary
    assert report.unsupported_overrides == []


# --------------------------------------------------------------------------- the LLM, a real server process


@pytest.fixture(scope="module")
def llm_url() -> Iterator[str]:
    with llm_server() as url:
        yield url


def test_llm_faithful_reply_is_used(diagnoser, llm_url: str) -> None:
    a = ask(diagnoser, user(RAY_CPUS, "I'm on 0.5"), llm=LLMClient(llm_url, model="faithful"))
    assert a.mode == "llm" and a.llm_note is None
    assert "[ray-init-num-cpus-renamed]" in a.answer and "ray_init.num_cpus=16" in a.answer
    assert "ray_kwargs.ray_init.num_cpus" not in a.answer  # the prompt held the 0.5 lines only
    assert a.citations[0].id == "ray-init-num-cpus-renamed"


def test_llm_without_model_name_uses_the_listed_one(diagnoser, llm_url: str) -> None:
    a = ask(diagnoser, user(RAY_CPUS), llm=LLMClient(llm_url.removesuffix("/v1")))
    assert a.mode == "llm"


@pytest.mark.parametrize(("mode", "bad"), [("invent", "trainer.fake_key=1"), ("quote", "flux capacitor")])
def test_llm_invention_is_rejected(diagnoser, llm_url: str, mode: str, bad: str) -> None:
    a = ask(diagnoser, user(RAY_CPUS), llm=LLMClient(llm_url, model=mode))
    assert a.mode == "extractive"
    assert a.llm_note is not None and "rejected" in a.llm_note and bad in a.llm_note
    assert bad not in a.answer
    assert "[ray-init-num-cpus-renamed]" in a.answer


def test_llm_down_or_broken_falls_back(diagnoser, llm_url: str) -> None:
    a = ask(diagnoser, user(RAY_CPUS), llm=LLMClient(llm_url, model="broken"))
    assert a.mode == "extractive" and a.llm_note and "HTTP 500" in a.llm_note
    from tests.server_harness import free_port

    b = ask(diagnoser, user(RAY_CPUS), llm=LLMClient(f"http://127.0.0.1:{free_port()}/v1", timeout=5))
    assert b.mode == "extractive" and b.llm_note and "unavailable" in b.llm_note


def test_llm_never_called_when_abstaining(diagnoser, llm_url: str) -> None:
    a = ask(diagnoser, user("how do I bake sourdough bread at home?"), llm=LLMClient(llm_url, model="invent"))
    assert a.abstained and a.mode == "extractive" and a.llm_note is None


def test_question_set_with_an_inventing_llm_has_no_unsupported_override(diagnoser, llm_url: str) -> None:
    cases = load_cases([QUESTIONS])[:12]
    report = run_ask_eval(diagnoser, cases, LLMClient(llm_url, model="invent"))
    assert report.llm_used == 0 and report.llm_rejected == report.answered > 0
    assert report.unsupported_overrides == []
    faithful = run_ask_eval(diagnoser, cases, LLMClient(llm_url, model="faithful"))
    assert faithful.llm_used == faithful.answered and faithful.unsupported_overrides == []


# --------------------------------------------------------------------------- the command


@pytest.fixture
def cli_diagnoser(diagnoser, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    import kb.cli.common

    monkeypatch.setattr(kb.cli.common, "build_diagnoser", lambda *a, **k: diagnoser)
    monkeypatch.delenv("VERL_DOCTOR_LLM_URL", raising=False)
    return diagnoser


def test_cli_ask_json_and_exit_codes(cli_diagnoser, runner, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kb.cli import main

    r = runner.invoke(main, ["ask", "--json", "how do I pass a proxy to wandb only?"])
    assert r.exit_code == 0, r.output
    body = json.loads(r.output)
    assert {"answer", "citations", "abstained"} <= set(body) and body["citations"][0]["id"] == "wandb-proxy"
    r = runner.invoke(main, ["ask", "how do I bake sourdough bread at home?"])
    assert r.exit_code == 1 and "I don't know" in r.output
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": RAY_CPUS}, {"role": "user", "content": "I'm on 0.5"}]))
    r = runner.invoke(main, ["ask", "--json", "--messages", str(chat)])
    assert r.exit_code == 0 and json.loads(r.output)["overrides"][0]["line"] == "ray_init.num_cpus=16"
    r = runner.invoke(main, ["ask", "-"], input=HYDRA_TRACE)
    assert r.exit_code == 0 and "ray-init-num-cpus-renamed" in r.output
    chat.write_text("{not json")
    r = runner.invoke(main, ["ask", "--messages", str(chat)])
    assert r.exit_code == 2 and "not JSON" in r.output
    r = runner.invoke(main, ["ask", "--verl-version", "x.y", "hi"])
    assert r.exit_code == 2


def test_eval_ask_flag(cli_diagnoser, runner, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kb.cli import main

    lines = (QUESTIONS / "questions.jsonl").read_text().splitlines()
    few = [*lines[:3], *(x for x in lines if '"messages"' in x)][:5]
    (tmp_path / "q.jsonl").write_text("\n".join(few) + "\n")
    r = runner.invoke(main, ["eval", "--ask", "--json", str(tmp_path / "q.jsonl")])
    assert r.exit_code == 0, r.output
    body = json.loads(r.output)
    assert body["report"]["cases"] == 5 and body["cited_or_abstained"] == 1.0
    r = runner.invoke(main, ["eval", "--ask", str(tmp_path / "q.jsonl")])
    assert r.exit_code == 0 and "cite-or-abstain 100.0%" in r.output


def test_answer_gives_environment_fixes_and_an_llm_may_repeat_them(diagnoser) -> None:  # type: ignore[no-untyped-def]
    from kb.ask import grounding_texts
    from kb.llm import Grounding, check_reply

    log = (
        REPO / "tests" / "fixtures" / "entries" / "nccl-socket-ifname" / "positive-docker0-bootstrap.log"
    ).read_text()
    a = ask(diagnoser, user(log))
    assert not a.abstained and a.citations[0].id == "nccl-socket-ifname"
    assert "export NCCL_SOCKET_IFNAME=eth0" in a.answer
    entry = diagnoser.entries["nccl-socket-ifname"]
    grounding = Grounding(grounding_texts([entry], [log]))
    assert check_reply("Run:\n```\nexport NCCL_SOCKET_IFNAME=eth0\n```", grounding) == []
