"""Tests of dist/symbol-order's reading of callgrind output (python3 -m unittest, from .ci/run)."""
import importlib.machinery
import importlib.util
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
_loader = importlib.machinery.SourceFileLoader("symbol_order", os.path.join(HERE, "symbol-order"))
_spec = importlib.util.spec_from_loader("symbol_order", _loader)
symbol_order = importlib.util.module_from_spec(_spec)
_loader.exec_module(symbol_order)

# Callgrind's compressed format: names are given once with their number, then by number
# alone; a call's inclusive cost follows its calls= line and is not the caller's own.
SAMPLE = """\
version: 1
positions: line
events: Ir
ob=(1) {binary}
fl=(1) src/main.rs
fn=(1) _ZN4main4main17h0000000000000001E
10 100
cob=(2) /usr/lib/libc.so.6
cfn=(2) memcpy
calls=3 0
11 5000
12 7
fn=(3) _ZN4main3hot17h0000000000000003E
20 900
ob=(2)
fn=(2)
0 40
ob=(1)
fn=(1)
13 3
"""


class SelfCosts(unittest.TestCase):
    def test_own_instructions_of_the_binary_only(self):
        with tempfile.TemporaryDirectory() as d:
            binary = os.path.join(d, "loadmark")
            open(binary, "w").close()
            path = os.path.join(d, "cg.1-run.42")
            with open(path, "w") as f:
                f.write(SAMPLE.format(binary=binary))
            costs = symbol_order.self_costs(path, os.path.realpath(binary))
        self.assertEqual(costs, {
            "_ZN4main4main17h0000000000000001E": 110,  # 100 + 7 + 3; the call's 5000 is not its own
            "_ZN4main3hot17h0000000000000003E": 900,
        })  # memcpy is libc's, not the binary's


if __name__ == "__main__":
    unittest.main()
