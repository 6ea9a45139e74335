"""Hydra's "did you mean": a rejected config key gets the key meant on the user's release, as a typed field of the
result, shown by the text renderer, the scan report, the web page and the TUI detail."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

from kb.cli import main
from kb.corpus import load_corpus
from kb.engine import Diagnoser
from kb.render_text import render_result
from kb.result import Result
from server.app import create_app
from server.settings import ServerSettings
from tests.conftest import CORPUS, REPO
from tui.widgets.diagnose.results import detail_body

RUNS = REPO / "tests" / "eval" / "verl_runs"


@pytest.fixture(scope="module")
def lexical() -> Diagnoser:
    return Diagnoser(load_corpus(CORPUS))


def _hydra_log(key: str, value: str, version: str | None = None) -> str:
    head = f"verl=={version}\n" if version else ""
    last = key.split(".")[-1]
    return (
        f"{head}Could not override '{key}'.\nTo append to your config use +{key}={value}\n"
        f"Key '{last}' is not in struct\n    full_key: {key}\n    object_type=dict\n\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
    )


@pytest.mark.parametrize(
    ("run", "key", "suggested", "line"),
    [
        ("hydra_trainer_nnode_typo", "trainer.nnode", "trainer.nnodes", "trainer.nnodes=2"),
        (
            "hydra_ray_init_old_key",
            "ray_init.num_cpus",
            "ray_kwargs.ray_init.num_cpus",
            "ray_kwargs.ray_init.num_cpus=16",
        ),
        (
            "hydra_ray_init_old_key_full_error",
            "ray_init.num_cpus",
            "ray_kwargs.ray_init.num_cpus",
            "ray_kwargs.ray_init.num_cpus=16",
        ),
        (
            "hydra_ray_init_timeline_old_key",
            "ray_init.timeline_json_file",
            "ray_kwargs.timeline_json_file",
            "ray_kwargs.timeline_json_file=/tmp/t.json",
        ),
        ("hydra_data_cache_dir_without_plus", "data.cache_dir", "+data.cache_dir", "+data.cache_dir=/tmp/x"),
        (
            "hydra_wandb_proxy_without_plus",
            "trainer.wandb_proxy",
            "+trainer.wandb_proxy",
            "+trainer.wandb_proxy=http://x:1",
        ),
        (
            "hydra_critic_model_fsdp_config_old_key",
            "critic.model.fsdp_config.param_offload",
            "critic.fsdp.param_offload",
            "critic.fsdp.param_offload=True",
        ),
        (
            "hydra_append_existing_key",
            "trainer.val_before_train",
            "trainer.val_before_train",
            "trainer.val_before_train=False",
        ),
    ],
)
def test_real_verl_runs_name_the_key_meant(lexical, run, key, suggested, line):
    result = lexical.diagnose((RUNS / run / "output.log").read_text(), semantic=False)
    assert len(result.did_you_mean) == 1
    d = result.did_you_mean[0]
    assert (d.key, d.suggested_key, d.line) == (key, suggested, line)
    assert d.release == "0.9.1" and d.release_assumed  # these logs name no release: the newest known is used
    assert d.line_no is not None


def test_a_key_verl_reads_that_is_missing_is_not_an_override_error(lexical):
    """'Key megatron is not in struct' comes from verl's code reading the FSDP config, not from an override."""
    result = lexical.diagnose((RUNS / "actor_strategy_megatron" / "output.log").read_text(), semantic=False)
    assert result.did_you_mean == []


@pytest.mark.parametrize(
    ("version", "key", "suggested"),
    [
        ("0.5.0", "ray_kwargs.ray_init.num_cpus", "ray_init.num_cpus"),  # the new name on an old release
        ("0.6.0", "ray_init.num_cpus", "ray_kwargs.ray_init.num_cpus"),
        ("0.7.1", "critic.fsdp.param_offload", "critic.model.fsdp_config.param_offload"),
        ("0.8.0", "critic.model.fsdp_config.param_offload", "critic.fsdp.param_offload"),
        ("0.9.1", "trainer.total_epoch", "trainer.total_epochs"),
    ],
)
def test_the_key_depends_on_the_release(lexical, version, key, suggested):
    result = lexical.diagnose(_hydra_log(key, "16", version), semantic=False)
    d = result.did_you_mean[0]
    assert d.release == version and not d.release_assumed
    assert d.suggested_key == suggested
    assert d.line == f"{suggested}=16"
    assert "did you mean " + suggested in d.summary()


def test_a_megatron_key_on_the_fsdp_config_names_the_config_not_a_neighbour(lexical):
    """Hydra refused a key only Megatron's trainer config has: the answer is the config to launch with, not
    FSDP's closest key (rollout.tensor_model_parallel_size, which would change the rollout instead)."""
    key = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"
    d = lexical.diagnose(_hydra_log(key, "2", "0.8.0"), semantic=False).did_you_mean[0]
    assert d.suggested_key is None and d.line is None and d.candidates == []
    assert "--config-name=ppo_megatron_trainer" in d.reason


def test_an_fsdp_key_refused_is_read_against_megatron_s_config(lexical):
    key = "actor_rollout_ref.actor.fsdp_config.param_offload"
    d = lexical.diagnose(_hydra_log(key, "True", "0.8.0"), semantic=False).did_you_mean[0]
    assert d.suggested_key == "actor_rollout_ref.actor.megatron.param_offload"
    assert d.line == "actor_rollout_ref.actor.megatron.param_offload=True" and "Megatron" in d.reason


def test_no_hydra_error_no_suggestion(lexical):
    result = lexical.diagnose("Traceback (most recent call last):\nValueError: boom\n", semantic=False)
    assert result.did_you_mean == []


def test_json_text_and_tui_show_it(lexical, runner):
    text = (RUNS / "hydra_trainer_nnode_typo" / "output.log").read_text()
    result = lexical.diagnose(text, semantic=False)
    again = Result.model_validate_json(result.model_dump_json())
    assert again.did_you_mean[0].suggested_key == "trainer.nnodes"

    buf = io.StringIO()
    render_result(result, Console(file=buf, width=100, color_system=None))
    out = buf.getvalue()
    assert "did you mean trainer.nnodes?" in out and "use: trainer.nnodes=2" in out

    assert result.matches
    body = detail_body(result.matches[0], result).plain
    assert "did you mean trainer.nnodes?" in body and "trainer.nnodes=2" in body

    cli = runner.invoke(main, ["match", str(RUNS / "hydra_trainer_nnode_typo" / "output.log")])
    assert "did you mean trainer.nnodes?" in cli.output


@pytest.fixture(scope="module")
def client(lexical: Diagnoser) -> Iterator[TestClient]:
    with TestClient(create_app(ServerSettings(semantic=False), lexical), base_url="http://127.0.0.1") as c:
        yield c


def test_web_page_has_the_suggestion_with_its_own_copy_block(client):
    text = (RUNS / "hydra_ray_init_old_key" / "output.log").read_text()
    r = client.post("/diagnose", data={"input": text}, headers={"accept": "text/html"})
    assert r.status_code == 200
    page = r.text
    assert "Did you mean <code>ray_kwargs.ray_init.num_cpus</code>?" in page
    block = page.split('class="card did-you-mean"', 1)[1].split("</section>", 1)[0]
    assert "data-copy" in block and "ray_kwargs.ray_init.num_cpus=16" in block
    twin = client.post("/diagnose", data={"input": text}, headers={"accept": "application/json"})
    assert twin.json()["did_you_mean"][0]["line"] == "ray_kwargs.ray_init.num_cpus=16"


def test_scan_report_shows_it(tmp_path, runner):
    job = tmp_path / "job"
    job.mkdir()
    (job / "main_ppo.log").write_text((RUNS / "hydra_trainer_nnode_typo" / "output.log").read_text())
    out = runner.invoke(main, ["scan", str(job)]).output
    assert "did you mean trainer.nnodes?" in out and "use: trainer.nnodes=2" in out
    md = runner.invoke(main, ["scan", "--markdown", str(job)]).output
    assert "did you mean trainer.nnodes?" in md and "trainer.nnodes=2" in md
