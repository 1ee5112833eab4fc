"""Configuration: the schema, composition, cross-key checks, Config -> spec adapters, and a result's identity (config_hash). The only stage-free place that knows Hydra."""
