"""Create the tiny offline inputs that produce.sh feeds to verl.

Writes, under the directory given as argv[1]:
  model/            a 2-layer random Qwen2 model + a BPE tokenizer trained offline
  data/train.parquet, data/val.parquet   gsm8k-style rows (8 each)
  data/tiny.parquet                       2 rows (smaller than the batch size)
  data/train.csv                          same rows, unsupported extension
  ckpt/ ...                               fake FSDP checkpoint layouts for model_merger
Nothing is downloaded.
"""

import json
import os
import shutil
import sys

import pandas as pd

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

# ---------------------------------------------------------------- data
questions = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did she sell altogether?",
    "Weng earns 12 dollars an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?",
    "Betty is saving money for a new wallet which costs 100 dollars. How much more money does Betty need?",
    "James writes a 3-page letter to 2 different friends twice a week. How many pages does he write a year?",
    "Mark has a garden with flowers. He planted plants of three different colors in it. How many flowers are there?",
    "Albert is wondering how much pizza he can eat in one day. How many pieces does he eat?",
    "Ken created a care package to send to his brother. What was the final weight?",
    "Alexis is applying for a new job and bought a new set of business clothes. How much did she pay?",
]
answers = ["72", "10", "5", "624", "35", "48", "16", "41"]


def rows(split, n=None):
    res = []
    for i, (q, a) in enumerate(zip(questions, answers)):
        res.append(
            {
                "data_source": "openai/gsm8k",
                "prompt": [{"role": "user", "content": q + " Let's think step by step and output the final answer after \"####\"."}],
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": a},
                "extra_info": {"split": split, "index": i, "answer": a, "question": q},
            }
        )
    return res[:n] if n else res


d = os.path.join(out, "data")
os.makedirs(d, exist_ok=True)
pd.DataFrame(rows("train")).to_parquet(os.path.join(d, "train.parquet"))
pd.DataFrame(rows("test")).to_parquet(os.path.join(d, "val.parquet"))
pd.DataFrame(rows("train", 2)).to_parquet(os.path.join(d, "tiny.parquet"))
pd.DataFrame(rows("train")).to_csv(os.path.join(d, "train.csv"), index=False)

# ---------------------------------------------------------------- tokenizer + model
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

mdir = os.path.join(out, "model")
os.makedirs(mdir, exist_ok=True)
special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
tok = Tokenizer(models.BPE(unk_token=None))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(questions * 4 + ["user assistant system " * 5], trainer=trainer)
chat_template = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
hf_tok = PreTrainedTokenizerFast(
    tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None
)
hf_tok.chat_template = chat_template
hf_tok.save_pretrained(mdir)

cfg = Qwen2Config(
    vocab_size=len(hf_tok),
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=1024,
    tie_word_embeddings=True,
    eos_token_id=hf_tok.eos_token_id,
    pad_token_id=hf_tok.pad_token_id,
    bos_token_id=None,
)
model = Qwen2ForCausalLM(cfg)
model.save_pretrained(mdir)

# ---------------------------------------------------------------- fake checkpoints for model_merger
ck = os.path.join(out, "ckpt")
# (a) root of a checkpoint dir (user passes this instead of global_step_N/actor)
act = os.path.join(ck, "root", "global_step_2", "actor")
os.makedirs(os.path.join(act, "huggingface"), exist_ok=True)
with open(os.path.join(ck, "root", "latest_checkpointed_iteration.txt"), "w") as f:
    f.write("2")
with open(os.path.join(act, "fsdp_config.json"), "w") as f:
    json.dump({"FSDP_version": 2, "world_size": 1}, f)
for name in os.listdir(mdir):
    if not name.endswith(".safetensors"):
        src = os.path.join(mdir, name)
        with open(src, "rb") as fi, open(os.path.join(act, "huggingface", name), "wb") as fo:
            fo.write(fi.read())
# (b) an actor dir with model shards named as verl saves them but no fsdp_config.json and no huggingface/
noconf = os.path.join(ck, "no_fsdp_config", "global_step_2", "actor")
os.makedirs(noconf, exist_ok=True)
import torch

torch.save({"dummy": torch.zeros(1)}, os.path.join(noconf, "model_world_size_1_rank_0.pt"))
# (c) huggingface/ present, fsdp_config.json missing
nohf = os.path.join(ck, "no_fsdp_config_with_hf", "global_step_2", "actor")
shutil.copytree(os.path.join(act, "huggingface"), os.path.join(nohf, "huggingface"))
torch.save({"dummy": torch.zeros(1)}, os.path.join(nohf, "model_world_size_1_rank_0.pt"))
# (d) complete layout, but the shard does not hold the model's weights
bad = os.path.join(ck, "bad_shard", "global_step_2", "actor")
shutil.copytree(act, bad)
torch.save({"dummy": torch.zeros(1)}, os.path.join(bad, "model_world_size_1_rank_0.pt"))
print("inputs written to", out)
