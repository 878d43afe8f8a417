"""Search spaces: the YAML schema, loading with located errors, domains and conditions."""

from tuner.space._config import Config
from tuner.space._load import load_space
from tuner.space._load import parse_space
from tuner.space._space import SearchSpace
from tuner.space._space import value_key


__all__ = ["Config", "SearchSpace", "load_space", "parse_space", "value_key"]
