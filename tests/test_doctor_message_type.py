"""`obbmeta doctor` checks $OBBMETA_CUSTOM_MSG_BLOB_TYPE with the message writer's own rule
(obbmeta.nvds.messages.custom_msg_blob_type): a value the writer refuses is a problem, with the writer's words."""
import os

import pytest
from test_demo_cli import obbmeta_cli

from obbmeta.nvds import messages

VARIABLE = "OBBMETA_CUSTOM_MSG_BLOB_TYPE"


def doctor_with(value):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GST_PLUGIN_PATH") and k != VARIABLE}
    if value is not None:
        env[VARIABLE] = value
    return obbmeta_cli("doctor", env=env, timeout=300)


def writer_error(monkeypatch, value) -> str:
    monkeypatch.setenv(VARIABLE, value)
    with pytest.raises(ValueError) as exc:
        messages.custom_msg_blob_type()
    return str(exc.value)


@pytest.mark.parametrize("value", ["9", "twenty-nine", "4096", "8192"])
def test_a_meta_type_the_writer_refuses_is_a_doctor_problem_in_the_writers_words(monkeypatch, value):
    doctor = doctor_with(value)
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stdout + doctor.stderr
    assert "no problems found" not in doctor.stdout
    problems = doctor.stdout.split("problem(s):")[1]
    assert writer_error(monkeypatch, value) in problems
    assert f"message blob meta type:    FAILED - ${VARIABLE}" in doctor.stdout


@pytest.mark.parametrize("value", ["29", "28", "8193"])
def test_a_meta_type_the_writer_takes_is_reported_as_ok(value):
    doctor = doctor_with(value)
    assert f"message blob meta type:    ok - {value} (from ${VARIABLE})" in doctor.stdout
    assert doctor.returncode == 0 and "no problems found" in doctor.stdout, doctor.stdout + doctor.stderr


def test_without_the_variable_doctor_reports_the_type_the_writer_uses(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    doctor = doctor_with(None)
    assert f"message blob meta type:    ok - {messages.custom_msg_blob_type()} (NVDS_CUSTOM_MSG_BLOB" in doctor.stdout
