"""Build a tiny random-weight MoE model and its tokenizer, offline, in seconds.

    python benchmarks/real_sglang/make_tiny.py OUT [--arch qwen3_moe|qwen3|deepseek_v3|qwen3_next]
        [--hidden N] [--vocab N] [--layers N] [--seed N] [--tokenizer-from DIR]
        [--dspark-draft DIR [--dspark-block-size G] [--dspark-layers N]]

Needs torch, transformers and tokenizers (the H200 image has them). The tokenizer is a
byte-level BPE trained on the interpreter's own standard-library sources unless
``--tokenizer-from`` names a saved one. ``deepseek_v3`` gets one MTP (NextN) layer appended
as ``model.layers.{L}.*`` in the checkpoint layout SGLang's NEXTN loader reads; SGLang's
``fused_eh_norm`` refuses hidden size 256, so use ``--hidden 512`` for it. ``qwen3_next`` is
the hybrid shape (Gated DeltaNet linear attention, full attention every
``full_attention_interval`` = 4 layers, a shared expert; use ``--layers 4``) with one MTP
layer as ``mtp.*`` tensors, the layout SGLang's ``Qwen3NextForCausalLMMTP`` loads
(:func:`append_qwen3_next_mtp`). Random weights:
accept length and accuracy mean nothing, every code path of the engine still runs.

``--dspark-draft DIR`` also writes a DSpark draft for the target (:func:`write_dspark_draft`):
a dense Qwen3-shaped block draft with the fields SGLang 0.5.17's DSPARK reads from its
``config.json`` (docs/real-sglang-h200.md). SGLang captures the target's auxiliary hidden
states only for target models with ``set_dflash_layers_to_capture`` (Qwen3, Qwen3-MoE, Llama,
DeepSeek-V2/V3, ...), and it captures "before layer k + 1", so every target layer id must be
below the target's last layer: use ``--layers 4`` or more for the target.
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
    if arch == "qwen3_next":
        from transformers import Qwen3NextConfig
        from transformers import Qwen3NextForCausalLM

        return Qwen3NextForCausalLM, Qwen3NextConfig(
            head_dim=64, intermediate_size=512, moe_intermediate_size=128, num_experts=8,
            num_experts_per_tok=2, shared_expert_intermediate_size=128,
            decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True,
            full_attention_interval=4, linear_conv_kernel_dim=4, linear_key_head_dim=64,
            linear_value_head_dim=64, linear_num_key_heads=2, linear_num_value_heads=4,
            partial_rotary_factor=0.25, **common)
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


def append_qwen3_next_mtp(out: str, cfg) -> None:  # type: ignore[no-untyped-def]
    """One MTP layer in the Qwen3-Next release layout, as SGLang 0.5.17's
    ``Qwen3NextForCausalLMMTP`` loads it (``models/qwen3_next.py`` ``load_weights`` with
    ``is_mtp``): ``mtp.fc`` (2h -> h), ``mtp.pre_fc_norm_embedding``, ``mtp.pre_fc_norm_hidden``,
    ``mtp.layers.0.*`` (read as ``model.layers.0.*`` of a one-layer model with
    ``full_attention_interval`` 1, so a full-attention MoE layer: a copy of the target's
    last layer, which is one) and ``mtp.norm``. The embedding and LM head are the target's.
    The config keeps the release's keys that SGLang's own ``Qwen3NextConfig`` reads
    (``full_attention_interval``, ``rope_theta``, ``partial_rotary_factor``) and no MTP count:
    the releases have none (``tuner init`` counts the ``mtp.*`` tensors)."""
    from safetensors.torch import load_file
    from safetensors.torch import save_file

    last = cfg.num_hidden_layers - 1
    if (last + 1) % 4:
        raise SystemExit("qwen3_next: --layers must be a multiple of 4 (the last layer is "
                         "the full-attention layer the MTP layer copies)")
    path = os.path.join(out, "model.safetensors")
    state = load_file(path)
    prefix = f"model.layers.{last}."
    for k in [k for k in state if k.startswith(prefix)]:
        state["mtp.layers.0." + k[len(prefix):]] = state[k].clone()
    h = cfg.hidden_size
    for norm in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
        state[f"mtp.{norm}.weight"] = torch.zeros(h, dtype=torch.bfloat16)  # (1 + w) norms
    state["mtp.fc.weight"] = (torch.randn(h, 2 * h) * 0.02).to(torch.bfloat16)
    save_file(state, path, metadata={"format": "pt"})
    cpath = os.path.join(out, "config.json")
    with open(cpath) as fh:
        data = json.load(fh)
    data |= {"full_attention_interval": 4, "rope_theta": 10000.0,
             "partial_rotary_factor": 0.25}
    data.pop("num_nextn_predict_layers", None)
    with open(cpath, "w") as fh:
        json.dump(data, fh, indent=1)
    print("added MTP layer (mtp.*, a copy of layer", last, ")")


def write_dspark_draft(out: str, target_cfg, *, layers: int, block_size: int,  # type: ignore[no-untyped-def]
                       markov_rank: int, seed: int) -> None:
    """A tiny DSpark draft for ``target_cfg``, as SGLang 0.5.17 loads one.

    What the wheel reads (paths inside ``sglang/``):

    * ``architectures: [Qwen3DSparkModel]`` - ``srt/models/dspark.py``'s ``EntryClass``
      (``Qwen3DSparkModel``, ``DSparkDraftModel``; 0.5.17 has no ``LingDSparkModel``);
      ``model_type: qwen3`` so that transformers parses the config;
    * ``block_size`` - gamma, when ``--speculative-dspark-block-size`` is not given
      (``dspark_config.parse_dspark_draft_config`` via ``dflash_utils.parse_dflash_draft_config``);
    * ``markov_rank`` > 0 and ``markov_head_type`` (vanilla/gated/rnn), top level:
      ``dspark.build_markov_head`` reads ``config.markov_rank`` itself, and
      ``resolve_runtime_config`` refuses ``markov_rank`` 0;
    * ``mask_token_id`` below the target's vocabulary (``resolve_runtime_config``);
    * ``target_layer_ids`` / ``num_target_layers`` - the target layers whose hidden states
      feed the draft's ``fc`` (``len(ids) x hidden -> hidden``); without them SGLang picks
      ``build_target_layer_ids``, which needs a target of 4 layers or more;
    * the hidden size of the target: the draft embeds with the target's embedding and
      projects through the target's LM head (``attach_shared_modules``), so neither is saved.

    Weights: ``layers.{i}.self_attn.{q,k,v,o}_proj``, ``q_norm``/``k_norm``, the MLP, the two
    norms per layer, ``norm``, ``fc``, ``hidden_norm`` and ``markov_head.markov_w{1,2}``
    (``DFlashDraftModel.load_weights`` ignores names it does not know, so every one is
    written: a missing one would stay uninitialised).
    """
    from safetensors.torch import save_file

    h = target_cfg.hidden_size
    heads, kv_heads = target_cfg.num_attention_heads, target_cfg.num_key_value_heads
    head_dim = getattr(target_cfg, "head_dim", None) or h // heads
    inter, vocab = target_cfg.intermediate_size, target_cfg.vocab_size
    target_layers = target_cfg.num_hidden_layers
    if target_layers < 3:
        raise SystemExit("a DSpark draft needs a target of 3 layers or more (--layers)")
    ids = sorted({1, target_layers - 2})       # below the last layer: captured before k + 1
    torch.manual_seed(seed + 7)

    def w(*shape: int):  # type: ignore[no-untyped-def]
        return (torch.randn(*shape) * 0.02).to(torch.bfloat16)

    def ones(n: int):  # type: ignore[no-untyped-def]
        return torch.ones(n, dtype=torch.bfloat16)

    state = {}
    for i in range(layers):
        p = f"layers.{i}."
        state |= {p + "self_attn.q_proj.weight": w(heads * head_dim, h),
                  p + "self_attn.k_proj.weight": w(kv_heads * head_dim, h),
                  p + "self_attn.v_proj.weight": w(kv_heads * head_dim, h),
                  p + "self_attn.o_proj.weight": w(h, heads * head_dim),
                  p + "self_attn.q_norm.weight": ones(head_dim),
                  p + "self_attn.k_norm.weight": ones(head_dim),
                  p + "mlp.gate_proj.weight": w(inter, h),
                  p + "mlp.up_proj.weight": w(inter, h),
                  p + "mlp.down_proj.weight": w(h, inter),
                  p + "input_layernorm.weight": ones(h),
                  p + "post_attention_layernorm.weight": ones(h)}
    state |= {"norm.weight": ones(h), "hidden_norm.weight": ones(h),
              "fc.weight": w(h, len(ids) * h),
              "markov_head.markov_w1.weight": w(vocab, markov_rank),
              "markov_head.markov_w2.weight": w(vocab, markov_rank)}
    os.makedirs(out, exist_ok=True)
    save_file(state, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    cfg = target_cfg.to_dict()
    for key in ("layer_types", "_name_or_path", "transformers_version"):
        cfg.pop(key, None)
    cfg |= {"architectures": ["Qwen3DSparkModel"], "model_type": "qwen3",
            "num_hidden_layers": layers, "block_size": block_size,
            "num_target_layers": target_layers, "target_layer_ids": ids,
            "markov_rank": markov_rank, "markov_head_type": "vanilla",
            "mask_token_id": vocab - 1}   # an id the tokenizer never produces, inside the vocab
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(cfg, fh, indent=1)
    print("saved DSpark draft", out, sum(t.numel() for t in state.values()) / 1e6,
          "M params, gamma", block_size, "target layers", ids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--arch", default="qwen3_moe")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--tokenizer-from", default=None)
    ap.add_argument("--dspark-draft", default=None, help="also write a DSpark draft here")
    ap.add_argument("--dspark-block-size", type=int, default=4)
    ap.add_argument("--dspark-layers", type=int, default=2)
    ap.add_argument("--markov-rank", type=int, default=16)
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
    if a.arch == "qwen3_next":
        append_qwen3_next_mtp(a.out, cfg)
    print("saved", a.out, sum(p.numel() for p in model.parameters()) / 1e6, "M params",
          cfg.architectures)
    if a.dspark_draft:
        write_dspark_draft(a.dspark_draft, cfg, layers=a.dspark_layers,
                           block_size=a.dspark_block_size, markov_rank=a.markov_rank,
                           seed=a.seed)


if __name__ == "__main__":
    main()
