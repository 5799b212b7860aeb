"""Checks add(a, b) from solution.py; prints the fraction of cases passed."""
import importlib.util

CASES = [((1, 2), 3), ((0, 0), 0), ((-4, 4), 0), ((10, 0), 10)]


def load():
    spec = importlib.util.spec_from_file_location("solution", "solution.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.add


def passes(add, args, want):
    try:
        return add(*args) == want
    except Exception:
        return False


try:
    add = load()
    passed = sum(passes(add, args, want) for args, want in CASES)
except Exception:
    passed = 0
print(passed / len(CASES))
