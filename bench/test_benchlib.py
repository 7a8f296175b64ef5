"""Unit tests of bench/benchlib.py (run by .ci/run: python3 -m unittest discover -s bench)."""
import os
import shutil
import stat
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

    def test_paths_and_pinned_commands(self):
        self.assertTrue(os.path.isfile(os.path.join(benchlib.ROOT, "bench", "benchlib.py")))
        self.assertEqual(benchlib.LOADMARK,
                         os.path.join(benchlib.ROOT, "target", "release", "loadmark"))
        self.assertEqual(benchlib.pinned_command(1, ["wrk", "-t1"], 15),
                         ["taskset", "-c", "1", "timeout", "15", "wrk", "-t1"])
        self.assertEqual(benchlib.pinned_command(0, ["nginx"], None, rt=True),
                         ["chrt", "-f", "10", "taskset", "-c", "0", "nginx"])

    def test_what_servers_say(self):
        said = "loadmark target listening on http://127.0.0.1:41234 (1 thread); Ctrl-C stops it\n"
        self.assertEqual(benchlib.said_port(said), 41234)
        self.assertEqual(benchlib.said_port("listening on http://127.0.0.1:8080"), 8080)
        self.assertIsNone(benchlib.said_port("error: address in use"))
        self.assertIsNone(benchlib.said_port(""))
        self.assertEqual(benchlib.served_count("served 12 requests\n"), 12)
        self.assertEqual(benchlib.served_count(
            "listening\nserved 401 requests, of which 400 WebSocket sessions: 9 messages"), 401)
        self.assertIsNone(benchlib.served_count("killed"))
        self.assertIsNone(benchlib.served_count(None))

    def test_gnu_time_line(self):
        # the command's own stderr comes first; time says a non-zero exit on a line of its own
        self.assertEqual(benchlib.time_fields("warning: x\n1.50 0.25 20480\n"), [1.5, 0.25, 20480])
        self.assertEqual(benchlib.time_fields("Command exited with non-zero status 1\n0.01 0.02"),
                         [0.01, 0.02])
        for bad in ("", None, "\n", "0.01 n/a"):
            with self.assertRaises(ValueError):
                benchlib.time_fields(bad)

    def test_result_summary(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with self.assertRaises(OSError):
                benchlib.result_summary(path)
            with open(path, "w") as f:
                f.write('{"summary": {"rps": 1000.5, "requests": {"responses": 7}}, "run": {}}')
            self.assertEqual(benchlib.result_summary(path)["requests"]["responses"], 7)
            with open(path, "w") as f:
                f.write('{"run": {}}')
            with self.assertRaises(KeyError):
                benchlib.result_summary(path)

    @unittest.skipUnless(os.access("/usr/bin/time", os.X_OK) and shutil.which("taskset")
                         and shutil.which("timeout"), "needs GNU time, taskset and timeout")
    def test_counted_run_of_a_stand_in(self):
        """A shell script stands in for loadmark (no server, no load): it writes a result to its
        -o file and its arguments beside it; counted_run reads both back through GNU time."""
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "loadmark")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\n"
                        "for a; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
                        "echo \"$*\" > \"$out.args\"\n"
                        "echo 'its own stderr' >&2\n"
                        "[ -n \"$BENCHLIB_FAKE_FAIL\" ] && exit 3\n"
                        "printf '{\"summary\": {\"rps\": 2000.0, \"requests\": "
                        "{\"responses\": 4}}}' > \"$out\"\n")
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
            out = os.path.join(d, "r.json")
            row = benchlib.counted_run(fake, "http://127.0.0.1:1/json", 0, 2, 4, out, ["--x", "y"])
            self.assertEqual(benchlib.read(out + ".args").split(),
                             ["run", "http://127.0.0.1:1/json", "-c", "2", "-t", "1", "-n", "4",
                              "-q", "-o", out, "--x", "y"])
            self.assertEqual((row["rps"], row["responses"]), (2000.0, 4))
            self.assertGreaterEqual(row["cpu_us"], 0)
            self.assertGreater(row["rss_mib"], 0)
            self.assertNotIn("rss_mib", benchlib.counted_run(fake, "u", 0, 1, 4, out, rss=False))
            os.environ["BENCHLIB_FAKE_FAIL"] = "1"
            try:
                with self.assertRaises(SystemExit):
                    benchlib.counted_run(fake, "u", 0, 1, 4, out)
            finally:
                del os.environ["BENCHLIB_FAKE_FAIL"]


if __name__ == "__main__":
    unittest.main()
