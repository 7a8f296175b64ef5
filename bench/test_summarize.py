"""Unit tests of summarize.py's arithmetic (run by .ci/run with the other bench/ tests)."""
import unittest

from summarize import per_pair_ratios


class PerPairRatios(unittest.TestCase):
    def test_pairs_by_repetition_and_skips_failed_or_missing_runs(self):
        rows = [
            {"scenario": "ka-json", "tool": "loadmark", "rep": "rep1", "rc": 0, "nginx_rps": 99.0},
            {"scenario": "ka-json", "tool": "wrk", "rep": "rep1", "rc": 0, "nginx_rps": 100.0},
            # a noisy run retried keeps its repetition
            {"scenario": "ka-json", "tool": "loadmark", "rep": "rep2.noisy1", "rc": 0,
             "nginx_rps": 110.0},
            {"scenario": "ka-json", "tool": "wrk", "rep": "rep2", "rc": 0, "nginx_rps": 100.0},
            # wrk failed in rep3: no pair
            {"scenario": "ka-json", "tool": "loadmark", "rep": "rep3", "rc": 0, "nginx_rps": 90.0},
            {"scenario": "ka-json", "tool": "wrk", "rep": "rep3", "rc": 1, "nginx_rps": 100.0},
            # another scenario is not mixed in
            {"scenario": "ka-10k", "tool": "wrk", "rep": "rep1", "rc": 0, "nginx_rps": 5.0},
        ]
        got = per_pair_ratios(rows, "ka-json", "loadmark", "wrk")
        self.assertEqual([rep for rep, _ in got], ["rep1", "rep2"])
        self.assertAlmostEqual(got[0][1], 0.99)
        self.assertAlmostEqual(got[1][1], 1.10)


if __name__ == "__main__":
    unittest.main()
