"""The aligner's config: JSON round trip and rejection of unknown keys and measures (models_ml.aligning.aligner_config)."""

from __future__ import annotations

import json

import pytest

from models_ml.aligning.aligner_config import AlignerConfig
from models_ml.aligning.crf import CRFConfig


def test_config_round_trips_through_dict_and_json() -> None:
    config = AlignerConfig(measure="jaccard", paragraph_variant="wikipedia", crf=CRFConfig(max_span=2), null_score=0.3)
    assert AlignerConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


@pytest.mark.parametrize(
    ("data", "key"),
    [({"treshold": 0.5}, "treshold"), ({"crf": {"max_spam": 2}}, "max_spam"), ({"measure": "bleu"}, "bleu")],
)
def test_config_from_dict_rejects_unknown_keys_and_measures(data: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        AlignerConfig.from_dict(data)
