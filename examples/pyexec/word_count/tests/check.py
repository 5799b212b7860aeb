"""Checks word_count(text) from solution.py; prints the fraction of cases passed."""
import importlib.util

CASES = [("", 0), ("one", 1), ("two words", 2), ("  spaced \t out\nlines  ", 3)]


def load():
    spec = importlib.util.spec_from_file_location("solution", "solution.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.word_count


def passes(word_count, text, want):
    try:
        return word_count(text) == want
    except Exception:
        return False


try:
    word_count = load()
    passed = sum(passes(word_count, text, want) for text, want in CASES)
except Exception:
    passed = 0
print(passed / len(CASES))
