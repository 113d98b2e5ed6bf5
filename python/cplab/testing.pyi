from typing import Any, Sequence, Union

from . import CheckReport

def assert_cp_equivalent(inputs: dict[str, Any], outputs: Union[dict[str, Any], Sequence[dict[str, Any]]],
                         **spec: Any) -> CheckReport: ...
