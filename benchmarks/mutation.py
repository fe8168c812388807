"""Mutation score of the conformance suite against the reference server's behaviour modules.

    python benchmarks/mutation.py                         # 40 mutants per module, seed 22
    python benchmarks/mutation.py --per-module 10 --seed 7 --jobs 2 --json mutation.json
    python benchmarks/mutation.py --sample 150            # 150 mutants drawn from all modules at once
    python benchmarks/mutation.py --modules access,store --list   # count the candidates, run nothing

Mutations come from cosmic-ray (its core operators, its enumeration, its ``use_mutation``); this script
only samples them and runs the kill test, the suite itself, in-process against the mutated server:

    python -m amp_conformance --app reference_server:default_app --no-fuzz \\
        --server-env AMP_ADMIN_TOKEN=T --admin-token T --allow-global-effects --seed 1 -q --json R.json

The mutated tree is a copy of ``reference_server/`` in a temporary folder (one per job), first on the
import path, so the repository is never modified. Outcomes per mutant, from the kill test's exit code
and JSON report:

* killed: exit 1, a MUST check failed.
* survived (warned): exit 0, but a check warns (or fails at SHOULD/MAY level) that did not in the
  baseline run: the suite noticed, the verdict did not change.
* survived: exit 0 and the same outcomes as the baseline (skips aside).
* timeout / incomplete: the run took longer than --timeout-factor x the baseline, or ended without a
  verdict (exit 2: the app failed to import or start, checks ended as errors; or no JSON report).
* invalid: cosmic-ray produced a module that does not compile (it sometimes rewrites the ``**`` of a
  dict display or the ``*`` of a signature); not run.

The score per module is killed / (killed + survived + survived-warned): timeouts, incomplete runs and
invalid mutants are left out of it and counted separately. Mutations that only touch type annotations
(never evaluated: every module has ``from __future__ import annotations``) are equivalent by
construction and skipped before sampling. Results are written to --json after every mutant, so an
interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import gzip
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cosmic_ray.plugins
from cosmic_ray.ast import ast_nodes, get_ast_from_path
from cosmic_ray.ast.ast_query import ASTQuery
from cosmic_ray.mutating import mutate_code, use_mutation

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "reference_server"
MODULES = ("service", "access", "lifecycle", "search", "bodies", "ratelimit", "store")
KILL_TEST = [
    "-m",
    "amp_conformance",
    "--app",
    "reference_server:default_app",
    "--no-fuzz",
    "--server-env",
    "AMP_ADMIN_TOKEN=T",
    "--admin-token",
    "T",
    "--allow-global-effects",
    "--seed",
    "1",
    "-q",
]
KILLED, SURVIVED, WARNED, TIMEOUT, INCOMPLETE, INVALID = (
    "killed",
    "survived",
    "survived-warned",
    "timeout",
    "incomplete",
    "invalid",
)


@dataclass(frozen=True)
class Candidate:
    module: str  # e.g. "service.py"
    operator: str
    occurrence: int
    line: int
    definition: str | None


@dataclass
class Result:
    module: str
    operator: str
    occurrence: int
    line: int
    definition: str | None
    diff: str
    outcome: str = ""
    exit_code: int | None = None
    seconds: float = 0.0
    killed_by: list[str] = field(default_factory=list)  # check ids that failed at MUST level
    new_findings: list[str] = field(default_factory=list)  # "check id: outcome" not in the baseline
    note: str = ""


# --- candidates (cosmic-ray's enumeration) ---------------------------------------------------------


def _operators() -> list[tuple[str, Any]]:
    """Every core operator that takes no arguments (those with arguments need a configuration)."""
    found = []
    for name in cosmic_ray.plugins.operator_names():
        operator_class = cosmic_ray.plugins.get_operator(name)
        if not operator_class.arguments():
            found.append((name, operator_class()))
    return found


def enumerate_candidates(modules: list[str]) -> dict[str, list[Candidate]]:
    """The mutations cosmic-ray's ``init`` would record, per module, in a stable order."""
    operators = _operators()
    by_module: dict[str, list[Candidate]] = {}
    for module in modules:
        path = REPO / PACKAGE / "amp01" / module
        tree = get_ast_from_path(path)
        nodes = list(ast_nodes(tree))
        found = []
        for name, operator in operators:
            occurrence = 0
            for node in nodes:
                for start, _end in operator.mutation_positions(node):
                    definition = None
                    with contextlib.suppress(Exception):
                        definition = ASTQuery(node).get_definition_name()
                    found.append(Candidate(module, name, occurrence, start[0], definition))
                    occurrence += 1
        by_module[module] = found
    return by_module


def _strip_annotations(source: str) -> str | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(value=None)
    return ast.dump(tree)


def mutated_source(candidate: Candidate, original: str) -> str | None:
    operator = cosmic_ray.plugins.get_operator(candidate.operator)()
    return mutate_code(original, operator, candidate.occurrence)  # type: ignore[no-any-return]


def make_diff(candidate: Candidate, original: str, mutated: str) -> str:
    name = f"{PACKAGE}/amp01/{candidate.module}"
    lines = difflib.unified_diff(
        original.splitlines(keepends=True), mutated.splitlines(keepends=True), f"a/{name}", f"b/{name}", n=1
    )
    return "".join(lines)


def sample(
    by_module: dict[str, list[Candidate]], per_module: int | None, total: int | None, seed: int
) -> tuple[list[Result], Counter[str]]:
    """Draw mutants at random (seeded), skipping annotation-only and no-op mutations."""
    rng = random.Random(seed)
    sources = {m: (REPO / PACKAGE / "amp01" / m).read_text(encoding="utf-8") for m in by_module}
    stripped = {m: _strip_annotations(s) for m, s in sources.items()}
    skipped: Counter[str] = Counter()

    def usable(candidate: Candidate) -> Result | None:
        original = sources[candidate.module]
        mutated = mutated_source(candidate, original)
        if mutated is None or mutated == original:
            skipped["no mutation"] += 1
            return None
        if _strip_annotations(mutated) == stripped[candidate.module]:
            skipped["annotation only (equivalent)"] += 1
            return None
        return Result(
            candidate.module,
            candidate.operator,
            candidate.occurrence,
            candidate.line,
            candidate.definition,
            make_diff(candidate, original, mutated),
        )

    def draw(pool: list[Candidate], wanted: int) -> list[Result]:
        pool = list(pool)
        rng.shuffle(pool)
        taken: list[Result] = []
        for candidate in pool:
            if len(taken) >= wanted:
                break
            result = usable(candidate)
            if result is not None:
                taken.append(result)
        return taken

    chosen: list[Result] = []
    if total is not None:
        chosen = draw([c for m in by_module for c in by_module[m]], total)
    else:
        for module in by_module:
            chosen.extend(draw(by_module[module], per_module or 0))
    chosen.sort(key=lambda r: (r.module, r.line, r.operator, r.occurrence))
    return chosen, skipped


# --- the kill test -------------------------------------------------------------------------------------


def make_tree(workdir: Path, index: int) -> Path:
    """A private copy of the reference server for one job; imports resolve to it first."""
    tree = workdir / f"job{index}"
    shutil.copytree(REPO / PACKAGE, tree / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def run_suite(tree: Path, timeout: float) -> tuple[int | None, float, dict[str, Any] | None, str]:
    """Run the kill test in ``tree``: (exit code or None on timeout, seconds, JSON report, output tail)."""
    report = tree / "report.json"
    report.unlink(missing_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, *KILL_TEST, "--json", str(report)]
    started = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        code = None
    seconds = time.monotonic() - started
    data = None
    if report.exists():
        with contextlib.suppress(ValueError):
            data = json.loads(report.read_text(encoding="utf-8"))
    tail = "\n".join(output.decode("utf-8", "replace").splitlines()[-6:])
    return code, seconds, data, tail


def outcomes_of(report: dict[str, Any] | None) -> dict[str, str]:
    if not report:
        return {}
    return {check["id"]: check["outcome"] for check in report.get("checks", [])}


def classify(
    result: Result,
    code: int | None,
    report: dict[str, Any] | None,
    baseline: dict[str, str],
    tail: str,
) -> None:
    now = outcomes_of(report)
    checks = {c["id"]: c for c in (report or {}).get("checks", [])}
    result.exit_code = code
    result.new_findings = sorted(
        f"{cid}: {outcome}"
        for cid, outcome in now.items()
        if outcome in ("fail", "warn", "error", "blocked") and baseline.get(cid) != outcome
    )
    result.killed_by = sorted(
        f"{cid} ({', '.join(checks[cid].get('finding_requirements') or checks[cid].get('requirements', []))})"
        for cid, outcome in now.items()
        if outcome == "fail" and checks[cid].get("level") == "MUST"
    )
    if code is None:
        result.outcome = TIMEOUT
    elif code == 1 and not now:  # exit 1 without a report: the suite crashed, no verdict
        result.outcome = INCOMPLETE
        result.note = tail[-600:]
    elif code == 1:
        result.outcome = KILLED
    elif code == 0:
        result.outcome = WARNED if result.new_findings else SURVIVED
    else:
        result.outcome = INCOMPLETE
        result.note = tail[-600:]


# --- driver --------------------------------------------------------------------------------------------


def score(results: list[Result]) -> dict[str, Any]:
    counts = Counter(r.outcome for r in results)
    judged = counts[KILLED] + counts[SURVIVED] + counts[WARNED]
    return {
        "mutants": len(results),
        **{k: counts[k] for k in (KILLED, SURVIVED, WARNED, TIMEOUT, INCOMPLETE, INVALID)},
        "score": round(counts[KILLED] / judged, 4) if judged else None,
        "score_counting_warnings": round((counts[KILLED] + counts[WARNED]) / judged, 4) if judged else None,
    }


def summary(results: list[Result], modules: list[str]) -> dict[str, Any]:
    done = [r for r in results if r.outcome]
    return {
        "per_module": {m: score([r for r in done if r.module == m]) for m in modules},
        "overall": score(done),
    }


def write_json(path: Path | None, meta: dict[str, Any], results: list[Result], modules: list[str]) -> None:
    if path is None:
        return
    data = {**meta, **summary(results, modules), "mutants": [compact(r) for r in results if r.outcome]}
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    tmp = path.with_suffix(path.suffix + ".tmp")
    if path.suffix == ".gz":  # the results kept in benchmarks/results/ are gzipped
        with gzip.open(tmp, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def read_json(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def compact(result: Result, keep: int = 5) -> dict[str, Any]:
    """A result for the JSON file: a killed mutant keeps only its first few killing checks."""
    data = asdict(result)
    if result.outcome == KILLED:
        killers = data["killed_by"]
        data["killed_by"] = killers[:keep] + (
            [f"... and {len(killers) - keep} more"] if len(killers) > keep else []
        )
        data["new_findings"] = []
    return data


def print_report(results: list[Result], modules: list[str]) -> None:
    data = summary(results, modules)
    print()
    print(
        f"{'module':<14}{'mutants':>8}{'killed':>8}{'surv.':>7}{'warned':>8}{'t/o':>5}{'inc.':>6}{'inv.':>6}"
        f"{'score':>8}"
    )
    for name, row in [*data["per_module"].items(), ("overall", data["overall"])]:
        shown = f"{row['score']:.1%}" if row["score"] is not None else "-"
        print(
            f"{name:<14}{row['mutants']:>8}{row[KILLED]:>8}{row[SURVIVED]:>7}{row[WARNED]:>8}"
            f"{row[TIMEOUT]:>5}{row[INCOMPLETE]:>6}{row[INVALID]:>6}{shown:>8}"
        )
    for label, kind in (("surviving mutants", SURVIVED), ("surviving mutants (warned)", WARNED)):
        chosen = [r for r in results if r.outcome == kind]
        if not chosen:
            continue
        print(f"\n{label} ({len(chosen)}):")
        for r in chosen:
            where = f"{PACKAGE}/amp01/{r.module}:{r.line}"
            print(f"\n--- {where}  {r.operator} #{r.occurrence}  (in {r.definition})")
            for finding in r.new_findings:
                print(f"    new: {finding}")
            print("    " + "\n    ".join(line for line in r.diff.splitlines()[2:]))
    others = [r for r in results if r.outcome in (TIMEOUT, INCOMPLETE, INVALID)]
    if others:
        print(f"\ntimeout / incomplete / invalid ({len(others)}):")
        for r in others:
            print(f"  {PACKAGE}/amp01/{r.module}:{r.line}  {r.operator} #{r.occurrence}: {r.outcome}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--per-module", type=int, default=None, help="mutants per module (default 40)")
    group.add_argument("--sample", type=int, default=None, help="mutants drawn from all modules together")
    parser.add_argument("--seed", type=int, default=22, help="seed of the sample (default 22)")
    parser.add_argument(
        "--modules", default=",".join(MODULES), help="comma-separated, of " + ", ".join(MODULES)
    )
    parser.add_argument("--jobs", type=int, default=1, help="mutants tested at once (default 1)")
    parser.add_argument("--timeout-factor", type=float, default=3.0, help="x the baseline run (default 3)")
    parser.add_argument(
        "--json", type=Path, default=None, help="write the results to this JSON file (.gz: gzipped)"
    )
    parser.add_argument("--list", action="store_true", help="count candidates per module and stop")
    parser.add_argument(
        "--report", type=Path, default=None, help="print the results of a --json file, run nothing"
    )
    args = parser.parse_args()
    if args.report is not None:
        saved = read_json(args.report)
        print_report([Result(**r) for r in saved["mutants"]], saved["modules"])
        return 0
    modules = [m.strip() if m.strip().endswith(".py") else m.strip() + ".py" for m in args.modules.split(",")]
    unknown = [m for m in modules if m[:-3] not in MODULES]
    if unknown:
        parser.error(f"unknown module(s): {', '.join(unknown)}")
    per_module = args.per_module if args.per_module is not None or args.sample is not None else 40

    by_module = enumerate_candidates(modules)
    if args.list:
        for module, found in by_module.items():
            ops = Counter(c.operator.removeprefix("core/").split("_")[0] for c in found)
            print(f"{module:<14}{len(found):>5}  " + ", ".join(f"{k} {v}" for k, v in ops.most_common()))
        print(f"{'total':<14}{sum(len(v) for v in by_module.values()):>5}")
        return 0

    # Ctrl-C and SIGTERM (also when started in the background, where SIGINT is ignored) end the run
    # after the mutants under test, with the report of what was measured.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    results, skipped = sample(by_module, per_module, args.sample, args.seed)
    jobs = max(1, args.jobs)
    workdir = Path(tempfile.mkdtemp(prefix="amp-mutation-"))
    try:
        trees = [make_tree(workdir, i) for i in range(jobs)]
        code, baseline_seconds, report, tail = run_suite(trees[0], timeout=600)
        if code != 0:
            print(f"the unmutated server does not pass (exit {code}):\n{tail}", file=sys.stderr)
            return 2
        baseline = outcomes_of(report)
        timeout = max(30.0, args.timeout_factor * baseline_seconds)
        meta = {
            "tool": "cosmic-ray " + _version("cosmic-ray"),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "seed": args.seed,
            "sample_per_module": None if args.sample is not None else per_module,
            "sample_total": args.sample,
            "modules": modules,
            "candidates": {m: len(v) for m, v in by_module.items()},
            "skipped_before_sampling": dict(skipped),
            "kill_test": " ".join(["python", *KILL_TEST]),
            "baseline_seconds": round(baseline_seconds, 2),
            "baseline_warnings": sorted(cid for cid, o in baseline.items() if o == "warn"),
            "timeout_seconds": round(timeout, 1),
            "jobs": jobs,
        }
        print(
            f"{len(results)} mutants of {sum(meta['candidates'].values())} candidates (seed {args.seed}); "
            f"baseline {baseline_seconds:.1f} s, timeout {timeout:.0f} s, {jobs} job(s)",
            flush=True,
        )
        todo: queue.Queue[Result] = queue.Queue()
        for r in _round_robin(results, random.Random(args.seed)):
            todo.put(r)
        lock = threading.Lock()
        done = [0]
        started = time.monotonic()

        def worker(tree: Path) -> None:
            while True:
                try:
                    result = todo.get_nowait()
                except queue.Empty:
                    return
                operator = cosmic_ray.plugins.get_operator(result.operator)()
                path = tree / PACKAGE / "amp01" / result.module
                invalid = False
                try:
                    with use_mutation(path, operator, result.occurrence) as (_original, mutated):
                        if mutated is None:
                            code, seconds, report, tail = 2, 0.0, None, "no mutation applied"
                        elif not _compiles(mutated, path):
                            invalid, code, seconds, report, tail = True, None, 0.0, None, ""
                        else:
                            code, seconds, report, tail = run_suite(tree, timeout)
                except Exception as exc:  # the driver's own failure: record it, go on
                    code, seconds, report, tail = 2, 0.0, None, f"driver error: {exc!r}"
                result.seconds = round(seconds, 2)
                if invalid:
                    result.outcome, result.note = INVALID, "the mutated module does not compile"
                else:
                    classify(result, code, report, baseline, tail)
                with lock:
                    done[0] += 1
                    elapsed = time.monotonic() - started
                    print(
                        f"[{done[0]:>4}/{len(results)} {elapsed / 60:5.1f} min] {result.outcome:<16}"
                        f"{result.module}:{result.line} {result.operator.removeprefix('core/')} "
                        f"({seconds:.0f} s)",
                        flush=True,
                    )
                    write_json(args.json, meta, results, modules)

        threads = [threading.Thread(target=worker, args=(tree,), daemon=True) for tree in trees]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=1)
        except KeyboardInterrupt:
            print("\ninterrupted: reporting the mutants tested so far", file=sys.stderr)
            while not todo.empty():
                with contextlib.suppress(queue.Empty):
                    todo.get_nowait()
            for thread in threads:
                thread.join(timeout=timeout + 5)
        meta["wall_minutes"] = round((time.monotonic() - started) / 60, 1)
        with lock:
            write_json(args.json, meta, results, modules)
            print_report([r for r in results if r.outcome], modules)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _round_robin(results: list[Result], rng: random.Random) -> list[Result]:
    """Test order: one mutant of each module in turn, so that a run cut short is still a fair sample."""
    by_module: dict[str, list[Result]] = {}
    for r in results:
        by_module.setdefault(r.module, []).append(r)
    for group in by_module.values():
        rng.shuffle(group)
    order: list[Result] = []
    while any(by_module.values()):
        for group in by_module.values():
            if group:
                order.append(group.pop())
    return order


def _compiles(source: str, path: Path) -> bool:
    with warnings.catch_warnings():  # e.g. SyntaxWarning for `is` with a literal: still a valid mutant
        warnings.simplefilter("ignore")
        try:
            compile(source, str(path), "exec")
        except SyntaxError:
            return False
    return True


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
