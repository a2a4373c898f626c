"""The command-line pass-through (SGC504-SGC508) on small trees: the generator's rules are read
from each release's own code, a command line with no option is an extraction error, and the
project's wrapper is understood from its code."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.diagnostics.catalog import load_catalog
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.commandline import command_line
from sglang_contracts.upstream.model import UpstreamModel
from tests.helpers import upstream_tree, write_tree

EXAMPLE = load_catalog()["SGC504"].examples[0]
GENERATOR = EXAMPLE.new["sglang/srt/arg_groups/arg_utils.py"]
NEW_SERVER_ARGS = EXAMPLE.new["sglang/srt/server_args.py"]
WRAPPER = EXAMPLE.project["app/arguments.py"]


def model(root: Path) -> UpstreamModel:
    return UpstreamModel(open_release(str(root), sglang_repo=None, cache=root / "cache"), RecordCache(None))


def check(tmp_path: Path, old: dict[str, str], new: dict[str, str], project: dict[str, str]) -> list[str]:
    old_root = upstream_tree(tmp_path / "old", old, "0.1.0")
    new_root = upstream_tree(tmp_path / "new", new, "0.2.0")
    root = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **project})
    result = run_check([root], CheckOptions(old=str(old_root), new=str(new_root), use_cache=False, workers=1))
    return [f"{d.path}:{d.line}: {d.code} {d.message}" for d in result.diagnostics]


def test_generated_options_follow_the_generator_of_the_release(tmp_path: Path) -> None:
    files = {"sglang/srt/server_args.py": NEW_SERVER_ARGS, "sglang/srt/arg_groups/arg_utils.py": GENERATOR}
    line = command_line(model(upstream_tree(tmp_path / "a", files, "0.2.0")))
    assert line.shape == "mixed"
    dp = line.by_string["--data-parallel-size"]
    assert (dp.strings, dp.dest, dp.default) == (("--dp-size", "--data-parallel-size"), "dp_size", "1")
    assert line.by_string["--cuda-graph-backend-prefill"].choices == ("breakable", "disabled")
    alias = line.by_string["--disable-piecewise-cuda-graph"]
    assert alias.deprecated and alias.replacement == "--cuda-graph-backend-prefill=disabled"
    # Another release's generator keeps underscores and stores under its own dest rule: the
    # options follow that code, not a rule written into this tool.
    other = GENERATOR.replace('name.replace("_", "-")', 'name.replace("_", "_")').replace(
        '"dest": field.name, ', "")
    line = command_line(model(upstream_tree(tmp_path / "b", {**files, "sglang/srt/arg_groups/arg_utils.py": other},
                                            "0.2.0")))
    dp = line.by_string["--data-parallel-size"]
    assert dp.strings == ("--dp_size", "--data-parallel-size") and dp.dest == "dp_size"
    assert "--dp-size" not in line.by_string


def test_a_command_line_without_options_is_an_extraction_error(tmp_path: Path) -> None:
    empty = "import dataclasses\n\n\n@dataclasses.dataclass\nclass ServerArgs:\n    tp_size: int = 1\n\n    @staticmethod\n    def add_cli_args(parser):\n        pass\n"
    found = check(tmp_path, {"sglang/srt/server_args.py": empty}, {"sglang/srt/server_args.py": empty},
                  {"app/arguments.py": WRAPPER, "app/run.py": "def f(args):\n    return args.sglang_tp_size\n"})
    assert len(found) == 1 and found[0].startswith("app/arguments.py:6: SGC000 cannot read upstream's command line")
    assert "yields no option" in found[0]


def test_an_unreadable_generator_is_an_extraction_error(tmp_path: Path) -> None:
    broken = GENERATOR.replace("names = [cli_name] + (meta.aliases or [])", "names = build_names(meta)")
    new = {"sglang/srt/server_args.py": NEW_SERVER_ARGS, "sglang/srt/arg_groups/arg_utils.py": broken}
    found = check(tmp_path, EXAMPLE.old, new, {"app/arguments.py": WRAPPER})
    assert [f.split(" (")[0] for f in found] == [
        "app/arguments.py:6: SGC000 cannot read upstream's command line for the --sglang- flags handed to it"]
    assert "where aliases come from" in found[0]


def test_a_project_without_a_wrapper_gets_no_pass_through_finding(tmp_path: Path) -> None:
    plain = "from sglang.srt.server_args import ServerArgs\n\ndef add(parser):\n    ServerArgs.add_cli_args(parser)\n"
    found = check(tmp_path, EXAMPLE.old, EXAMPLE.new,
                  {"app/arguments.py": plain, "app/run.py": "def f(args):\n    return args.sglang_data_parallel_size\n"})
    assert not [f for f in found if " SGC50" in f]


def test_reads_of_a_record_the_project_builds_itself_are_not_judged(tmp_path: Path) -> None:
    project = {"app/arguments.py": WRAPPER.replace('"tp_size"]', '"config"]'), "app/config.py": '''
import dataclasses


@dataclasses.dataclass
class Launch:
    sglang_data_parallel_size: int = 1


def flags(cfg: Launch, ns):
    return cfg.sglang_data_parallel_size, ns.sglang_data_parallel_size


DEFAULTS = {"sglang_data_parallel_size": 1}
''', "app/validate.py": "def validate(args):\n    return args.sglang_data_parallel_size\n"}
    found = check(tmp_path, EXAMPLE.old, EXAMPLE.new, project)
    assert [f.split(" raises")[0] for f in found if " SGC504" in f] == ["app/validate.py:2: SGC504 sglang_data_parallel_size"]


def test_choice_values_are_read_from_flag_strings_shell_and_yaml(tmp_path: Path) -> None:
    project = {"app/arguments.py": WRAPPER.replace('"tp_size"]', '"config"]'),
               "configs/run.yaml": "args: --sglang-load-format npcache --sglang-dp-size 2\n",
               "scripts/run.sh": "python train.py --sglang-load-format=pt\n"}
    found = check(tmp_path, EXAMPLE.old, EXAMPLE.new, project)
    assert [f.split(" ")[0:2] for f in found if " SGC509 " not in f] == [["configs/run.yaml:1:", "SGC506"]]


def test_argument_lists_for_launch_server_are_judged_without_a_prefix(tmp_path: Path) -> None:
    project = {"app/serve.py": '''import subprocess


def serve(model, tp):
    cmd = ["python3", "-m", "sglang.launch_server", "--model-path", model, "--tp-size", str(tp)]
    cmd += ["--load-format", "npcache", "--disable-piecewise-cuda-graph"]
    return subprocess.Popen(cmd)


def unrelated():
    return ["--load-format", "npcache"]
''', "scripts/serve.sh": "python3 -m sglang.launch_server \\\\\n  --model-path m \\\\\n  --load-format=npcache\n"
          "echo --load-format npcache\n"}
    found = check(tmp_path, EXAMPLE.old, EXAMPLE.new, project)
    assert [" ".join(f.split(" ")[:3]) for f in found] == [
        "app/serve.py:6: SGC506 --load-format", "app/serve.py:6: SGC505 --disable-piecewise-cuda-graph:",
        "app/serve.py:6: SGC508 --disable-piecewise-cuda-graph",
        "scripts/serve.sh:3: SGC506 --load-format"]


def test_a_config_class_turned_into_launch_server_flags(tmp_path: Path) -> None:
    project = {"app/engine.py": '''import dataclasses
import subprocess


@dataclasses.dataclass
class EngineConfig:
    model_path: str
    data_parallel_size: int = 1
    disable_piecewise_cuda_graph: bool = False
    router_port: int = 0


def launch(config: EngineConfig):
    cmd = ["python", "-m", "sglang.launch_server"]
    for field in dataclasses.fields(config):
        cmd += [f"--{field.name.replace('_', '-')}", str(getattr(config, field.name))]
    return subprocess.Popen(cmd)
'''}
    found = check(tmp_path, EXAMPLE.old, EXAMPLE.new, project)
    # --data-parallel-size is still accepted (an alias of --dp-size); the switch became a deprecated alias
    assert [" ".join(f.split(" ")[:3]) for f in found] == [
        "app/engine.py:9: SGC505 --disable-piecewise-cuda-graph:", "app/engine.py:9: SGC508 --disable-piecewise-cuda-graph"]


def test_a_wrapper_whose_prefix_and_skip_list_are_arguments(tmp_path: Path) -> None:
    # miles' later shape: one function registers upstream's options twice, under two prefixes.
    wrapper = '''from sglang.srt.server_args import ServerArgs

SKIPPED = ["model_path"]
EVAL_SKIPPED = SKIPPED + ["tp_size"]


def _register(parser, *, flag_prefix, dest_prefix, skipped):
    original = parser.add_argument

    def prefixed(*flags, **kwargs):
        name = kwargs.get("dest") or flags[0].lstrip("-").replace("-", "_")
        if name in skipped:
            return
        if "dest" in kwargs:
            kwargs["dest"] = f"{dest_prefix}{kwargs['dest']}"
        original(*[f"--{flag_prefix}-{flag.lstrip('-')}" for flag in flags], **kwargs)

    parser.add_argument = prefixed
    ServerArgs.add_cli_args(parser)
    parser.add_argument = original


def add_arguments(parser):
    _register(parser, flag_prefix="sglang", dest_prefix="sglang_", skipped=SKIPPED)
    _register(parser, flag_prefix="eval-sglang", dest_prefix="eval_sglang_", skipped=EVAL_SKIPPED)
'''
    project = {"app/arguments.py": wrapper,
               "app/validate.py": "def validate(args):\n    return args.sglang_data_parallel_size, args.eval_sglang_tensor_parallel_size\n",
               "scripts/run.sh": "python train.py --eval-sglang-tp-size 2 --sglang-tp-size 2\n"}
    found = check(tmp_path, EXAMPLE.old, EXAMPLE.new, project)
    assert [" ".join(f.split(" ")[:3]) for f in found] == [
        "app/arguments.py:4: SGC507 the",  # "tp_size" of the eval list now skips the tp option
        "app/arguments.py:7: SGC509 --sglang-cuda-graph-backend-prefill,",  # once, not once per prefix
        "app/validate.py:2: SGC504 sglang_data_parallel_size",
        "app/validate.py:2: SGC504 eval_sglang_tensor_parallel_size",
        "scripts/run.sh:1: SGC505 --eval-sglang-tp-size:"]


def test_a_refused_flag_in_a_comment_or_help_text_is_a_warning(tmp_path: Path) -> None:
    """slime's run script names a flag in a comment, its arguments.py in a `help=` string: prose
    nothing runs (the audit's two false errors); the same flag on a command line is an error."""
    refused = load_catalog()["SGC505"].examples[0]  # its wrapper's skip list now drops --sglang-tp-size
    project = {"app/arguments.py": refused.project["app/arguments.py"], "app/extra.py": '''def add(parser):
    parser.add_argument("--sync", help="like --sglang-tp-size, but slower")
    return ["--sglang-tp-size", "2"]
''', "scripts/run.sh": "# earlier runs used --sglang-tp-size 2\n"
                      "python train.py --sglang-tp-size 2  # '#' is not a comment in quotes\n"}
    old_root = upstream_tree(tmp_path / "old", refused.old, "0.1.0")
    new_root = upstream_tree(tmp_path / "new", refused.new, "0.2.0")
    root = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **project})
    result = run_check([root], CheckOptions(old=str(old_root), new=str(new_root), use_cache=False, workers=1))
    severity = {(d.path, d.line): d.severity for d in result.diagnostics if d.code == "SGC505"}
    assert severity == {("app/extra.py", 2): "warning", ("app/extra.py", 3): "error",
                        ("scripts/run.sh", 1): "warning", ("scripts/run.sh", 2): "error"}


# -- argparse abbreviations ---------------------------------------------------------------------

ABBREVIATED = load_catalog()["SGC505"].examples[1]
LAUNCH = "python train.py \\\n  --sglang-mem-frac 0.8 \\\n  --sglang-data-par 2\n"


def _abbreviated_project(parse_function: str) -> dict[str, str]:
    wrapper = ABBREVIATED.project["app/arguments.py"]
    head = wrapper[:wrapper.index("def parse_sglang_args")]
    return {"app/arguments.py": head + parse_function, "scripts/run.sh": LAUNCH}


def test_an_abbreviation_is_judged_where_the_projects_parser_allows_it(tmp_path: Path) -> None:
    # The parser reaches the wrapper through a helper's parameter: followed up the calls.
    project = _abbreviated_project("def _register(parser):\n    add_sglang_arguments(parser)\n\n\n"
                                   "def parse(argv):\n    parser = argparse.ArgumentParser()\n    _register(parser)\n"
                                   "    return parser.parse_known_args(argv)[0]\n")
    found = check(tmp_path, ABBREVIATED.old, ABBREVIATED.new, project)
    assert [f.split(" ", 2)[:2] for f in found] == [["scripts/run.sh:2:", "SGC505"]]
    assert "ambiguous" in found[0] and "--sglang-mem-fraction-draft" in found[0]


def test_an_abbreviation_is_not_judged_where_the_parser_refuses_or_cannot_be_seen(tmp_path: Path) -> None:
    refusing = _abbreviated_project("def parse(argv):\n    parser = argparse.ArgumentParser(allow_abbrev=False)\n"
                                    "    add_sglang_arguments(parser)\n    return parser.parse_known_args(argv)[0]\n")
    assert check(tmp_path / "refusing", ABBREVIATED.old, ABBREVIATED.new, refusing) == []
    # Megatron's parse_args(extra_args_provider=...) builds the parser (with allow_abbrev=False).
    framework = _abbreviated_project("def extra_args(parser):\n    return add_sglang_arguments(parser)\n\n\n"
                                     "def parse():\n    return megatron_parse_args(extra_args_provider=extra_args)\n")
    assert check(tmp_path / "framework", ABBREVIATED.old, ABBREVIATED.new, framework) == []


def test_a_direct_launch_abbreviation_follows_upstreams_own_parser(tmp_path: Path) -> None:
    launch = {"scripts/serve.sh": "python3 -m sglang.launch_server \\\n  --model-path m \\\n  --mem-frac 0.8\n"}
    found = check(tmp_path / "allowed", ABBREVIATED.old, ABBREVIATED.new, launch)
    assert [f.split(" ", 2)[:2] for f in found] == [["scripts/serve.sh:3:", "SGC505"]]
    def refusing(release: dict[str, str]) -> dict[str, str]:
        return {path: text + "\n\ndef prepare_server_args(argv):\n    parser = argparse.ArgumentParser(allow_abbrev=False)\n"
                "    ServerArgs.add_cli_args(parser)\n    return parser.parse_args(argv)\n" for path, text in release.items()}

    assert check(tmp_path / "refusing", refusing(ABBREVIATED.old), refusing(ABBREVIATED.new), launch) == []
    (stopped,) = check(tmp_path / "stopped", ABBREVIATED.old, refusing(ABBREVIATED.old), launch)
    assert "no longer takes abbreviations (allow_abbrev=False): write --mem-fraction-static" in stopped


def test_a_flag_no_parser_knows_is_a_warning_where_the_project_ignores_unknown_flags(tmp_path: Path) -> None:
    # slime: its sglang parser reads with parse_known_args and Megatron with ignore_unknown_args=True,
    # so a --sglang- flag that no option takes any more is dropped without a word, not refused.
    def severities(root: Path, project: dict[str, str]) -> dict[int, tuple[str, str]]:
        old_root = upstream_tree(root / "old", ABBREVIATED.old, "0.1.0")
        new_root = upstream_tree(root / "new", ABBREVIATED.new, "0.2.0")
        tree = write_tree(root / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **project})
        result = run_check([tree], CheckOptions(old=str(old_root), new=str(new_root), use_cache=False, workers=1))
        return {d.line: (d.severity, d.message) for d in result.diagnostics if d.code == "SGC505"}

    strict = severities(tmp_path / "strict", ABBREVIATED.project)
    lenient = severities(tmp_path / "lenient", {**ABBREVIATED.project, "app/train.py": (
        "from app.arguments import add_sglang_arguments\n\n\ndef parse():\n"
        "    return megatron_parse_args(extra_args_provider=add_sglang_arguments, ignore_unknown_args=True)\n")})
    assert strict.keys() == lenient.keys() == {2, 3, 4, 5}
    gone = [line for line, (_, message) in strict.items() if "no longer accepts it" in message]
    assert gone and all(strict[line][0] == "error" and lenient[line][0] == "warning" for line in gone)
    assert "dropped without a word" in lenient[gone[0]][1] and "dropped" not in strict[gone[0]][1]
    # an ambiguous prefix stops argparse whatever the project does with unknown flags
    assert all(lenient[line] == strict[line] for line in strict if line not in gone)


def test_a_flag_in_a_string_over_several_lines_is_placed_where_it_is_written() -> None:
    from sglang_contracts.project.commandline import _uses_in

    text = ('import sglang\nCMD = ("python train.py "\n       "--sglang-tp-size 2 "\n'
            '       "--sglang-mem-fraction-static 0.8 --sglang-tp-size 3")\nDOC = """\n  --sglang-dp-size 4\n"""\n'
            'ONE = "x --sglang-ep-size 1"\nESCAPED = ("--sglang-\\x61b 1 "\n           "z")\n')
    places = [(row[1], row[2], row[4], row[5]) for row in _uses_in("a.py", text, "--sglang-", "sglang_")]
    assert places == [("--sglang-tp-size", "2", 3, 9), ("--sglang-mem-fraction-static", "0.8", 4, 9),
                      ("--sglang-tp-size", "3", 4, 42), ("--sglang-dp-size", "4", 6, 3), ("--sglang-ep-size", "1", 8, 10),
                      ("--sglang-ab", "1", 9, 12)]  # written with an escape: the expression's start
