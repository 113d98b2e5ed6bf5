"""_options.py: Python keyword arguments as the `cplab` command line's options.

What it is: args(command, kwargs, known) turns `mode="p2p", cp=4, causal=True, cu_seqlens=[0, 12,
36]` into ["--mode", "p2p", "--cp", "4", "--causal", "--cu-seqlens", "0,12,36"]: the name with "_"
as "-"; True a flag, False and None left out; a list or tuple joined by commas; a float written so
that it reads back as the same double (repr). The C++ side then parses them with the command
line's own registration, defaults and rules (app/embedded.h), so a broken rule raises ValueError
with the command line's message. A keyword the command does not have raises TypeError naming the
options it has (known: the command's long option names, from the C++ registration).
What it is not: validation of values (the C++ side does all of it).
"""
import numbers


def _text(name, value):
    if isinstance(value, bool):
        raise TypeError(f"{name}={value!r}: a True/False value goes to a flag; --{name.replace('_', '-')} takes a value")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ",".join(_text(name, v) for v in value)
    if hasattr(value, "tolist"):  # a NumPy array or scalar of sizes (cu_seqlens)
        return _text(name, value.tolist())
    raise TypeError(f"{name}={value!r}: expected a number, a string or a list of numbers, got {type(value).__name__}")


def args(function, kwargs, known, flags):
    """The option list of kwargs for `function` (its Python name, for messages); known: the
    command's long option names without dashes; flags: those that take no value."""
    out = []
    for name, value in kwargs.items():
        opt = name.replace("_", "-")
        if opt not in known:
            names = ", ".join(sorted(k.replace("-", "_") for k in known))
            raise TypeError(f"{function}() got an unexpected keyword argument '{name}' (it takes: {names})")
        if value is None or value is False:
            continue
        if opt in flags:
            if value is not True:
                raise TypeError(f"{name}={value!r}: {name} is a flag (True or False)")
            out.append("--" + opt)
            continue
        out += ["--" + opt, _text(name, value)]
    return out
