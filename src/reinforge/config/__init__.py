"""Configuration: pydantic schema and YAML loading."""

from reinforge.config.loader import ConfigError, config_from_dict, load_config
from reinforge.config.schema import ReinforgeConfig

__all__ = ["ConfigError", "ReinforgeConfig", "config_from_dict", "load_config"]
