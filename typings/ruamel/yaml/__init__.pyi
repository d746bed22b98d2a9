from typing import Any

from ruamel.yaml.error import YAMLError as YAMLError
from ruamel.yaml.main import YAML as YAML

__version__: str

def __getattr__(name: str) -> Any: ...
