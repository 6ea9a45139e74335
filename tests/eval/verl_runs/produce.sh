#!/usr/bin/env bash
# Re-generate the real verl outputs stored next to this script.
#
# usage: produce.sh [VERL_VENV]          (default: $VERL_VENV or /work/verl-venv)
# env:   VERL_EXTRA    dir with the extra pure-python packages (default /work/verl-extra);
#                      it is put on PYTHONPATH only for the cases that need to get past
#                      verl's optional imports (see README.md)
#        VERL_SCRATCH  scratch dir for inputs and per-case working dirs (default /tmp/verl_runs_scratch)
#        CASE_TIMEOUT  seconds per case (default 300)
#        ONLY          space-separated list of case names to (re)run; default: all
#
# Each case writes <case>/command.txt, <case>/output.log, <case>/exit_code.txt.
set -u

VENV=${1:-${VERL_VENV:-/work/verl-venv}}
EXTRA=${VERL_EXTRA:-/work/verl-extra}
SCRATCH=${VERL_SCRATCH:-/tmp/verl_runs_scratch}
TIMEOUT=${CASE_TIMEOUT:-300}
ONLY=${ONLY:-}
HERE=$(cd "$(dirname "$0")" && pwd)
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
    echo "no python at $PY" >&2
    exit 2
fi

IN="$SCRATCH/inputs"
if [ ! -f "$IN/model/config.json" ]; then
    mkdir -p "$SCRATCH"
    "$PY" "$HERE/make_inputs.py" "$IN" >/dev/null 2>&1 || { echo "make_inputs.py failed" >&2; exit 2; }
fi
D="$IN/data"
M="$IN/model"

# A complete, otherwise valid argument set for main_ppo on the tiny inputs.
BASE=(
    "data.train_files=$D/train.parquet"
    "data.val_files=$D/val.parquet"
    data.train_batch_size=4
    data.max_prompt_length=128
    data.max_response_length=32
    "actor_rollout_ref.model.path=$M"
    actor_rollout_ref.actor.ppo_mini_batch_size=4
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1
    actor_rollout_ref.rollout.name=vllm
    critic.ppo_micro_batch_size_per_gpu=1
    "critic.model.path=$M"
    trainer.n_gpus_per_node=1
    trainer.logger=console
)

# base without the entries whose key (text before '=') is listed in $@
base_without() {
    local a k skip
    for a in "${BASE[@]}"; do
        skip=0
        for k in "$@"; do
            [ "${a%%=*}" = "$k" ] && skip=1
        done
        [ $skip -eq 0 ] && printf '%s\n' "$a"
    done
}

want() {
    [ -z "$ONLY" ] && return 0
    case " $ONLY " in *" $1 "*) return 0 ;; esac
    return 1
}

MAXLINES=400
HEADLINES=100
TAILLINES=250

# run_case NAME TIMEOUT ENV_ASSIGNMENTS... -- ARGV...
#   ENV_ASSIGNMENTS are VAR=value words applied on top of the current environment
#   (HYDRA_FULL_ERROR is always removed unless re-added here).
run_case() {
    local name=$1 tmo=$2
    shift 2
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    shift
    want "$name" || return 0

    local out="$HERE/$name" work="$SCRATCH/work/$name"
    rm -rf "$work"
    mkdir -p "$out" "$work"

    local cmd="cd $(printf '%q' "$work") &&"
    local e
    for e in "${envs[@]}"; do cmd+=" $(printf '%q' "$e")"; done
    cmd+=" timeout $tmo"
    local a
    for a in "$@"; do cmd+=" $(printf '%q' "$a")"; done
    printf '%s\n' "$cmd" >"$out/command.txt"

    echo "[$(date +%H:%M:%S)] $name ..." >&2
    local raw="$work/.raw_output.log" sidfile="$work/.sid"
    (
        cd "$work" || exit 2
        # own session, so that everything the case starts (Ray) can be found and ended afterwards
        exec setsid bash -c 'echo $$ >"$0"; exec "$@"' "$sidfile" \
            env -u HYDRA_FULL_ERROR "${envs[@]}" timeout "$tmo" "$@"
    ) >"$raw" 2>&1
    local rc=$?
    echo "$rc" >"$out/exit_code.txt"

    # end leftovers of this case only (processes in its session)
    if [ -s "$sidfile" ]; then
        local sid pids
        sid=$(cat "$sidfile")
        sleep 2
        pids=$(ps -eo pid=,sid= | awk -v s="$sid" '$2 == s {print $1}')
        if [ -n "$pids" ]; then
            kill $pids 2>/dev/null
            sleep 3
            pids=$(ps -eo pid=,sid= | awk -v s="$sid" '$2 == s {print $1}')
            [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        fi
    fi

    local n
    n=$(wc -l <"$raw")
    if [ "$n" -gt "$MAXLINES" ]; then
        {
            head -n "$HEADLINES" "$raw"
            echo "[verl-doctor produce.sh: $((n - HEADLINES - TAILLINES)) lines omitted; full output had $n lines]"
            tail -n "$TAILLINES" "$raw"
        } >"$out/output.log"
    else
        cp "$raw" "$out/output.log"
    fi
    echo "[$(date +%H:%M:%S)] $name -> exit $rc, $n lines" >&2
}

PPO=("$PY" -m verl.trainer.main_ppo)
MERGER=("$PY" -m verl.model_merger)
X="PYTHONPATH=$EXTRA"   # extra packages (cachetools, uvicorn, ...) for the legacy trainer path
T=$TIMEOUT

mapfile -t B < <(base_without)

# ---------------------------------------------------------------- Hydra / OmegaConf level
run_case hydra_ray_init_old_key $T -- "${PPO[@]}" "${B[@]}" ray_init.num_cpus=16
run_case hydra_ray_init_old_key_full_error $T HYDRA_FULL_ERROR=1 -- "${PPO[@]}" "${B[@]}" ray_init.num_cpus=16
run_case hydra_trainer_nnode_typo $T -- "${PPO[@]}" "${B[@]}" trainer.nnode=2
run_case hydra_data_cache_dir_without_plus $T -- "${PPO[@]}" "${B[@]}" data.cache_dir=/tmp/x
run_case hydra_append_existing_key $T -- "${PPO[@]}" "${B[@]}" +trainer.val_before_train=False
run_case hydra_wandb_proxy_without_plus $T -- "${PPO[@]}" "${B[@]}" trainer.wandb_proxy=http://x:1
run_case hydra_ray_init_timeline_old_key $T -- "${PPO[@]}" "${B[@]}" ray_init.timeline_json_file=/tmp/t.json
run_case hydra_critic_model_fsdp_config_old_key $T -- "${PPO[@]}" "${B[@]}" critic.model.fsdp_config.param_offload=True
run_case hydra_grammar_double_equals $T -- "${PPO[@]}" "${B[@]}" data.train_batch_size==4
run_case hydra_grammar_special_chars $T -- "${PPO[@]}" "${B[@]}" 'trainer.experiment_name=qwen-grpo(lr=1e-6)'
run_case hydra_grammar_special_chars_full_error $T HYDRA_FULL_ERROR=1 -- "${PPO[@]}" "${B[@]}" 'trainer.experiment_name=qwen-grpo(lr=1e-6)'
mapfile -t B_NO_TBS < <(base_without data.train_batch_size)
run_case type_train_batch_size_abc $T -- "${PPO[@]}" "${B_NO_TBS[@]}" data.train_batch_size=abc
run_case type_rollout_n_two $T -- "${PPO[@]}" "${B[@]}" actor_rollout_ref.rollout.n=two
run_case hydra_comma_value_sweep $T -- "${PPO[@]}" "${B[@]}" actor_rollout_ref.actor.optim.lr=1e-6,2e-6
run_case hydra_grammar_unclosed_bracket $T -- "${PPO[@]}" "${B[@]}" 'trainer.logger=[console,wandb'
mapfile -t B_NO_NAME < <(base_without actor_rollout_ref.rollout.name)
run_case rollout_name_missing $T -- "${PPO[@]}" "${B_NO_NAME[@]}"
run_case rollout_name_missing_legacy_trainer $T "$X" -- "${PPO[@]}" "${B_NO_NAME[@]}" trainer.use_v1=False

# ---------------------------------------------------------------- config validation in main() (before Ray)
mapfile -t B_NO_AMB < <(base_without actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu)
run_case actor_micro_batch_missing $T -- "${PPO[@]}" "${B_NO_AMB[@]}"
run_case actor_micro_batch_missing_full_error $T HYDRA_FULL_ERROR=1 -- "${PPO[@]}" "${B_NO_AMB[@]}"
run_case actor_micro_batch_both_set $T -- "${PPO[@]}" "${B[@]}" actor_rollout_ref.actor.ppo_micro_batch_size=4
run_case actor_micro_batch_not_divisor $T -- "${PPO[@]}" "${B_NO_AMB[@]}" actor_rollout_ref.actor.ppo_micro_batch_size=3
run_case train_batch_smaller_than_mini_batch $T -- "${PPO[@]}" "${B_NO_TBS[@]}" data.train_batch_size=2
mapfile -t B_NO_RLP < <(base_without actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu)
run_case rollout_log_prob_micro_batch_missing $T -- "${PPO[@]}" "${B_NO_RLP[@]}"
mapfile -t B_NO_REF < <(base_without actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu)
run_case ref_log_prob_micro_batch_missing_kl_loss $T -- "${PPO[@]}" "${B_NO_REF[@]}" actor_rollout_ref.actor.use_kl_loss=True
mapfile -t B_NO_CMB < <(base_without critic.ppo_micro_batch_size_per_gpu)
run_case critic_micro_batch_missing_gae $T -- "${PPO[@]}" "${B_NO_CMB[@]}"
run_case val_do_sample_temperature_zero $T -- "${PPO[@]}" "${B[@]}" actor_rollout_ref.rollout.val_kwargs.do_sample=True actor_rollout_ref.rollout.temperature=0
mapfile -t B_NO_NGPU < <(base_without trainer.n_gpus_per_node)
run_case batch_not_divisible_by_gpus $T -- "${PPO[@]}" "${B_NO_NGPU[@]}" trainer.n_gpus_per_node=3
# trainer.n_gpus_per_node left at its default (8): the batch check fires before any GPU check
run_case default_8_gpus_batch_not_divisible $T -- "${PPO[@]}" "${B_NO_NGPU[@]}"
run_case actor_strategy_megatron $T -- "${PPO[@]}" "${B[@]}" actor_rollout_ref.actor.strategy=megatron
run_case ulysses_without_remove_padding $T -- "${PPO[@]}" "${B[@]}" actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 actor_rollout_ref.model.use_remove_padding=False
run_case loss_agg_mode_bogus $T -- "${PPO[@]}" "${B[@]}" actor_rollout_ref.actor.loss_agg_mode=bogus
run_case vllm_not_installed_lora $T -- "${PPO[@]}" "${B[@]}" actor_rollout_ref.model.lora_rank=8

# ---------------------------------------------------------------- after Ray start
# default trainer.use_v1=true: TaskRunnerV1 imports transfer_queue (extra 'verl-core', not installed)
run_case v1_transfer_queue_missing $T -- "${PPO[@]}" "${B[@]}"
# legacy trainer without the extra packages: first missing optional dependency
run_case legacy_trainer_missing_cachetools $T -- "${PPO[@]}" "${B[@]}" trainer.use_v1=False
mapfile -t B_NO_NGPU_TBS < <(base_without trainer.n_gpus_per_node data.train_batch_size)
run_case no_gpu_default_8_gpus $T "$X" -- "${PPO[@]}" "${B_NO_NGPU_TBS[@]}" data.train_batch_size=8 trainer.use_v1=False
run_case no_gpu_one_gpu $T "$X" -- "${PPO[@]}" "${B[@]}" trainer.use_v1=False
mapfile -t B_CSV < <(base_without data.train_files)
run_case data_unsupported_csv $T "$X" -- "${PPO[@]}" "${B_CSV[@]}" "data.train_files=$D/train.csv" trainer.use_v1=False
run_case data_train_file_missing $T "$X" -- "${PPO[@]}" "${B_CSV[@]}" "data.train_files=$D/does_not_exist.parquet" trainer.use_v1=False
run_case data_prompt_key_wrong $T "$X" -- "${PPO[@]}" "${B[@]}" data.prompt_key=question trainer.use_v1=False
run_case data_prompt_key_wrong_filter_overlong $T "$X" -- "${PPO[@]}" "${B[@]}" data.prompt_key=question data.filter_overlong_prompts=True trainer.use_v1=False
run_case data_all_prompts_overlong $T "$X" -- "${PPO[@]}" "${B[@]}" data.max_prompt_length=8 data.filter_overlong_prompts=True trainer.use_v1=False
run_case data_smaller_than_batch $T "$X" -- "${PPO[@]}" "${B_CSV[@]}" "data.train_files=$D/tiny.parquet" trainer.use_v1=False
mapfile -t B_NO_MODEL < <(base_without actor_rollout_ref.model.path critic.model.path)
run_case model_path_missing $T "$X" HF_HUB_OFFLINE=1 -- "${PPO[@]}" "${B_NO_MODEL[@]}" actor_rollout_ref.model.path=/nonexistent/Qwen2.5-0.5B-Instruct critic.model.path=/nonexistent/Qwen2.5-0.5B-Instruct trainer.use_v1=False
# pretend there is a GPU (Ray resource only): the placement group wants 1 GPU + 3 CPUs but the
# machine has 2 CPUs -> Ray autoscaler warnings, the job never starts (killed by timeout)
run_case fake_gpu_insufficient_cpus_hang 120 "$X" -- "${PPO[@]}" "${B[@]}" trainer.use_v1=False +ray_kwargs.ray_init.num_gpus=1
# pretend there is a GPU and enough CPUs: workers start and die in torch.distributed init (CPU torch)
run_case fake_gpu_cpu_torch_no_nccl $T "$X" -- "${PPO[@]}" "${B[@]}" trainer.use_v1=False +ray_kwargs.ray_init.num_gpus=1 ray_kwargs.ray_init.num_cpus=4

# ---------------------------------------------------------------- model merger
C="$IN/ckpt"
run_case merger_local_dir_missing $T -- "${MERGER[@]}" merge --backend fsdp --local_dir /nonexistent/checkpoints/global_step_100/actor --target_dir "$SCRATCH/work/merged"
run_case merger_checkpoint_root $T -- "${MERGER[@]}" merge --backend fsdp --local_dir "$C/root" --target_dir "$SCRATCH/work/merged"
run_case merger_no_fsdp_config $T -- "${MERGER[@]}" merge --backend fsdp --local_dir "$C/no_fsdp_config/global_step_2/actor" --target_dir "$SCRATCH/work/merged"
run_case merger_no_fsdp_config_with_hf $T -- "${MERGER[@]}" merge --backend fsdp --local_dir "$C/no_fsdp_config_with_hf/global_step_2/actor" --target_dir "$SCRATCH/work/merged"
run_case merger_bad_shard $T -- "${MERGER[@]}" merge --backend fsdp --local_dir "$C/bad_shard/global_step_2/actor" --target_dir "$SCRATCH/work/merged"
run_case merger_missing_shards $T -- "${MERGER[@]}" merge --backend fsdp --local_dir "$C/root/global_step_2/actor" --target_dir "$SCRATCH/work/merged"
run_case merger_megatron_on_fsdp_dir $T -- "${MERGER[@]}" merge --backend megatron --local_dir "$C/root/global_step_2/actor" --target_dir "$SCRATCH/work/merged"

echo "done" >&2
