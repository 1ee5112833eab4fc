"""MLflow params: secret-looking keys are masked by the same rule the config check uses, and
ordinary keys that merely contain "token" keep their values (issue 14, item 2)."""

from __future__ import annotations

from sweep.outputs.tracking import params_of


def test_params_mask_secrets_and_keep_tokenizer_and_max_tokens() -> None:
    params = params_of({"chunk": {"tokenizer": "minilm"},
                        "generation": {"max_tokens": 256, "api_key_env": "OPENAI_API_KEY",
                                       "api_key": "sk-x1234", "base_url": "http://u:p@h/v1"},
                        "eval": {"token_budget": 1024}})
    assert params["chunk.tokenizer"] == "minilm"
    assert params["generation.max_tokens"] == "256"
    assert params["eval.token_budget"] == "1024"
    assert params["generation.api_key_env"] == "OPENAI_API_KEY"
    assert params["generation.api_key"] == "***"
    assert params["generation.base_url"] == "***"
