"""Unit tests of bench/benchlib.py (run by .ci/run: python3 -m unittest discover -s bench)."""
import os
import tempfile
import unittest

import benchlib


class BenchlibTest(unittest.TestCase):
    def test_percentiles_of_both_schemas(self):
        new = {"percentiles_us": [{"p": 50.0, "us": 120}, {"p": 99.0, "us": 812}]}
        old = {"percentiles_us": [[50.0, 120], [99.0, 812]]}
        for dist in (new, old):
            self.assertEqual(benchlib.percentile_us(dist, 99), 812)
            self.assertEqual(benchlib.percentile_us(dist, 50.0), 120)
            self.assertIsNone(benchlib.percentile_us(dist, 99.9))
        self.assertIsNone(benchlib.percentile_us(None, 99))

    def test_numbers_and_units(self):
        self.assertEqual(benchlib.med([3, None, 1, 2]), 2)
        self.assertIsNone(benchlib.med([None]))
        self.assertEqual(benchlib.fmt(None, ".1f"), "—")
        self.assertEqual(benchlib.fmt(1234.5, ",.0f"), "1,234")
        self.assertEqual(benchlib.ratio(3, 2), 1.5)
        self.assertIsNone(benchlib.ratio(3, 0))
        self.assertAlmostEqual(benchlib.to_ms("812µs"), 0.812)
        self.assertEqual(benchlib.to_ms("1.5s"), 1500.0)
        self.assertIsNone(benchlib.to_ms("n/a"))
        self.assertEqual(benchlib.dig({"a": {"b": 1}}, "a", "b"), 1)
        self.assertIsNone(benchlib.dig({"a": 1}, "a", "b"))

    def test_replace_section_keeps_the_rest(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "RESULTS.md")
            benchlib.replace_section(path, "## B", "## B\n\nfirst\n")
            self.assertEqual(benchlib.read(path), "## B\n\nfirst\n")
            with open(path, "w") as f:
                f.write("# Title\n\n## A\n\na\n\n## B\n\nold\n\n## C\n\nc\n")
            benchlib.replace_section(path, "## B", "## B\n\nnew\n")
            self.assertEqual(benchlib.read(path), "# Title\n\n## A\n\na\n\n## B\n\nnew\n\n## C\n\nc\n")
            benchlib.replace_section(path, "## D", "## D\n\nd\n")
            self.assertTrue(benchlib.read(path).endswith("## C\n\nc\n\n## D\n\nd\n"))
            with open(os.path.join(d, "meta.txt"), "w") as f:
                f.write("DUR=20\nnot a pair\nknobs=a=1 b=2\n")
            self.assertEqual(benchlib.meta(os.path.join(d, "meta.txt")), {"DUR": "20", "knobs": "a=1 b=2"})


if __name__ == "__main__":
    unittest.main()
