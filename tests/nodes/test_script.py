"""The ``sh -c`` interpreter behind ``kubectl logs`` and the simulated kubelet's exit times and codes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pumice.nodes.duration import exit_code, pod_duration
from pumice.nodes.script import simulate


def run(script: str, **env: str):
    return simulate({"command": ["sh", "-c", script]}, env=env)


def test_lists_and_exit_codes() -> None:
    r = run("echo a && false && echo b || echo c; echo $?; exit 4; echo d")
    assert [line.text for line in r.lines] == ["a", "c", "0"]
    assert (r.exit_code, r.exit_at, r.complete) == (4, 0.0, True)
    assert run("set -e; echo a; false; echo b").exit_code == 1
    assert [line.text for line in run("set -e; false || echo ok; false && echo no; echo end").lines] == ["ok", "end"]


def test_quotes_variables_and_redirections() -> None:
    r = run("X='a  b'; echo \"[$X]\" '$X' \\$X ${HOSTNAME}; echo hidden >/tmp/f; echo shown 1>&2; echo -n x; echo y",
            HOSTNAME="p-0")
    assert [line.text for line in r.lines] == ["[a  b] $X $X p-0", "shown", "xy"]
    assert [line.text for line in run("printf '%s:%03d\\n' a 7 b 8; echo -e 'l1\\nl2'").lines] == [
        "a:007", "b:008", "l1", "l2"]


def test_what_is_not_followed_is_said() -> None:
    for script, word in [("for i in 1 2; do echo $i; done", "for"), ("echo a | wc -l", "pipe"),
                         ("sleep 5 & wait", "background"), ("echo $(date)", "substitution"),
                         ("python x.py", "python")]:
        r = run(script)
        assert not r.complete and word in r.problem, (script, r.problem)
    r = run("echo first; sleep 7; curl http://x; echo never")
    assert [line.text for line in r.lines] == ["first"] and r.stopped_at == 7 and "curl" in r.problem


def test_the_kubelet_ends_pods_as_their_commands_say() -> None:
    def pod(*commands: list[str]) -> dict:
        return {"metadata": {}, "spec": {"containers": [{"name": f"c{i}", "command": c}
                                                        for i, c in enumerate(commands)]}}
    assert pod_duration(pod(["sh", "-c", "echo hi; sleep 30; exit 2"])) == 30
    assert exit_code(pod(["sh", "-c", "echo hi; sleep 30; exit 2"])) == 2
    assert pod_duration(pod(["sh", "-c", "echo done"])) == 0  # it ends at once, as a real container would
    assert pod_duration(pod(["sleep", "10"], ["sh", "-c", "sleep 1m"])) == 60
    assert pod_duration(pod(["sh", "-c", "sleep infinity"])) is None
    # not followed: the sleeps in the words still tell how long, as before
    assert pod_duration(pod(["sh", "-c", "while true; do sleep 5; done; sleep 300"])) == 305
    assert pod_duration(pod(["python", "train.py"])) is None


_statement = st.one_of(
    st.tuples(st.just("echo"), st.text(alphabet="abcxyz019 ._-", min_size=1, max_size=12).map(str.strip)
              .filter(lambda s: s != "")),
    st.tuples(st.just("sleep"), st.integers(min_value=0, max_value=500)),
)


@given(st.lists(_statement, min_size=1, max_size=12), st.integers(min_value=0, max_value=255))
def test_each_line_at_the_sum_of_the_sleeps_before_it(statements: list[tuple[str, object]], code: int) -> None:
    script = "; ".join(f"echo '{arg}'" if op == "echo" else f"sleep {arg}" for op, arg in statements)
    r = run(f"{script}; exit {code}")
    expected, now = [], 0
    for op, arg in statements:
        if op == "echo":
            expected.append((now, arg))
        else:
            assert isinstance(arg, int)
            now += arg
    assert [(line.at, line.text) for line in r.lines] == expected
    assert (r.exit_at, r.exit_code, r.complete) == (now, code, True)
