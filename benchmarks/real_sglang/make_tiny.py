"""Build a tiny random-weight MoE model and its tokenizer, offline, in seconds.

    python benchmarks/real_sglang/make_tiny.py OUT [--arch qwen3_moe|qwen3|deepseek_v3]
        [--hidden N] [--vocab N] [--layers N] [--seed N] [--tokenizer-from DIR]

Needs torch, transformers and tokenizers (the H200 image has them). The tokenizer is a
byte-level BPE trained on the interpreter's own standard-library sources unless
``--tokenizer-from`` names a saved one. ``deepseek_v3`` gets one MTP (NextN) layer appended
as ``model.layers.{L}.*`` in the checkpoint layout SGLang's NEXTN loader reads; SGLang's
``fused_eh_norm`` refuses hidden size 256, so use ``--hidden 512`` for it. Random weights:
accept length and accuracy mean nothing, every code path of the engine still runs.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import sysconfig
import tempfile

import torch
from tokenizers import Tokenizer
from tokenizers import decoders
from tokenizers import models
from tokenizers import pre_tokenizers
from tokenizers import processors
from tokenizers import trainers
from transformers import PreTrainedTokenizerFast


def train_tokenizer(vocab: int) -> PreTrainedTokenizerFast:
    files = sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))[:200]
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=vocab - 8, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t.train(files, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=t, bos_token=None, eos_token="<|im_end|>",
                                  pad_token="<|endoftext|>", unk_token=None)
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    return tok


def build_config(arch: str, common: dict):  # type: ignore[no-untyped-def]
    if arch == "qwen3_moe":
        from transformers import Qwen3MoeConfig
        from transformers import Qwen3MoeForCausalLM

        return Qwen3MoeForCausalLM, Qwen3MoeConfig(
            head_dim=64, intermediate_size=512, moe_intermediate_size=128, num_experts=8,
            num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[],
            norm_topk_prob=True, **common)
    if arch == "qwen3":
        from transformers import Qwen3Config
        from transformers import Qwen3ForCausalLM

        return Qwen3ForCausalLM, Qwen3Config(head_dim=64, intermediate_size=512, **common)
    if arch == "deepseek_v3":
        from transformers import DeepseekV3Config
        from transformers import DeepseekV3ForCausalLM

        common = {k: v for k, v in common.items() if k != "num_key_value_heads"}
        return DeepseekV3ForCausalLM, DeepseekV3Config(
            num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=512, qk_nope_head_dim=128,
            qk_rope_head_dim=64, v_head_dim=128, intermediate_size=512,
            moe_intermediate_size=128, n_routed_experts=8, n_shared_experts=1,
            num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=0,
            routed_scaling_factor=1.0, num_nextn_predict_layers=1, topk_method="noaux_tc",
            scoring_func="sigmoid", norm_topk_prob=True, **common)
    raise SystemExit(f"unknown --arch {arch!r}")


def append_mtp_layer(out: str, model_cls, cfg, seed: int) -> None:  # type: ignore[no-untyped-def]
    """A full MoE decoder layer plus enorm/hnorm/eh_proj/shared_head.norm as layer L."""
    from safetensors.torch import load_file
    from safetensors.torch import save_file

    layers = cfg.num_hidden_layers
    bigger = copy.deepcopy(cfg)
    bigger.num_hidden_layers = layers + 1
    torch.manual_seed(seed + 1)
    big = model_cls(bigger).to(torch.bfloat16)
    state = load_file(os.path.join(out, "model.safetensors"))
    with tempfile.TemporaryDirectory() as td:
        big.save_pretrained(td, safe_serialization=True)   # checkpoint layout, per expert
        for fn in glob.glob(os.path.join(td, "*.safetensors")):
            for k, v in load_file(fn).items():
                if k.startswith(f"model.layers.{layers}."):
                    state[k] = v.contiguous()
    h = cfg.hidden_size
    for norm in ("enorm", "hnorm", "shared_head.norm"):
        state[f"model.layers.{layers}.{norm}.weight"] = torch.ones(h, dtype=torch.bfloat16)
    state[f"model.layers.{layers}.eh_proj.weight"] = (
        torch.randn(h, 2 * h) * 0.02).to(torch.bfloat16)
    save_file(state, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    path = os.path.join(out, "config.json")
    with open(path) as fh:
        data = json.load(fh)
    data.setdefault("moe_layer_freq", 1)
    data["rope_theta"] = data.get("rope_theta") or 10000.0
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1)
    print("added MTP layer", layers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--arch", default="qwen3_moe")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--tokenizer-from", default=None)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tok = (PreTrainedTokenizerFast.from_pretrained(a.tokenizer_from) if a.tokenizer_from
           else train_tokenizer(a.vocab))
    tok.save_pretrained(a.out)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    pad = tok.convert_tokens_to_ids("<|endoftext|>")
    torch.manual_seed(a.seed)
    common = dict(vocab_size=a.vocab, hidden_size=a.hidden, num_hidden_layers=a.layers,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                  rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False,
                  bos_token_id=pad, eos_token_id=eos, pad_token_id=pad, torch_dtype="bfloat16")
    model_cls, cfg = build_config(a.arch, common)
    model = model_cls(cfg).to(torch.bfloat16)
    model.generation_config.do_sample = False
    model.save_pretrained(a.out, safe_serialization=True)
    if a.arch == "deepseek_v3":
        append_mtp_layer(a.out, model_cls, cfg, a.seed)
    print("saved", a.out, sum(p.numel() for p in model.parameters()) / 1e6, "M params",
          cfg.architectures)


if __name__ == "__main__":
    main()
