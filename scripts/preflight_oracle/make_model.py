"""Write a tiny random Qwen2 model + BPE tokenizer (offline, nothing downloaded) to a directory.

Why: from 0.6-ish on, verl's validate_config converts ``critic`` to its dataclass, which
instantiates ``HFModelConfig`` and so opens ``critic.model.path`` (tokenizer + HF config). The
oracle's critic configs point there so that the only failures recorded are the intended ones;
``actor_rollout_ref.model.path`` stays a dummy path (validation does not open it), and the
``critic_model_path_missing`` kind records what verl does with a dummy critic path.

usage: python make_model.py DIR      (inside a verl venv: needs transformers + tokenizers)
"""

from __future__ import annotations

import json
import os
import sys


def make(out: str) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    os.makedirs(out, exist_ok=True)
    text = ["Natalia sold clips to 48 of her friends in April. How many clips did she sell?",
            "user assistant system " * 5]
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(text * 4, trainer=trainer)
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    hf_tok.chat_template = (
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] "
        "+ '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    )
    hf_tok.save_pretrained(out)
    # transformers 5 records its own class name (TokenizersBackend), which transformers 4 (the
    # venvs of verl < 0.9.0) cannot load; PreTrainedTokenizerFast is the same tokenizer in both
    tc = os.path.join(out, "tokenizer_config.json")
    with open(tc, encoding="utf-8") as fh:
        conf = json.load(fh)
    conf["tokenizer_class"] = "PreTrainedTokenizerFast"
    with open(tc, "w", encoding="utf-8") as fh:
        json.dump(conf, fh, indent=2)
    cfg = Qwen2Config(vocab_size=len(hf_tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                      tie_word_embeddings=True, eos_token_id=hf_tok.eos_token_id,
                      pad_token_id=hf_tok.pad_token_id)
    Qwen2ForCausalLM(cfg).save_pretrained(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: make_model.py DIR", file=sys.stderr)
        sys.exit(2)
    make(sys.argv[1])
