"""The AWS deployment, checked without an AWS account: `serverless package` (osls, from the
committed package-lock.json) builds the zip and the CloudFormation template offline, cfn-lint
finds nothing wrong with the template, and moto's CloudFormation creates the stack — the
table, the four functions, their schedules and the IAM policy are there as serverless.yml says.

Skipped only when Node.js is absent; `make test` installs the npm packages (`npm ci`) first, and
this module does the same when they are missing.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from reaper.app.ssm import SECRET_VARIABLES
from reaper.store.dynamodb import ATTRIBUTE_DEFINITIONS, KEY_SCHEMA, TTL_ATTRIBUTE
from tests.aws_support import AWS_ENV

ROOT = Path(__file__).resolve().parent.parent
SERVERLESS = ROOT / "node_modules" / ".bin" / "serverless"
STAGE = "ci"
STACK = f"reaper-{STAGE}"
FUNCTIONS = {"reap", "watch", "digest", "http"}
MAX_UNZIPPED = 15 * 1024 * 1024

pytestmark = [
    pytest.mark.skipif(
        shutil.which("node") is None,
        reason="Node.js is not installed: the serverless.yml check needs node 20+ and npm",
    ),
]


def npm_ci() -> None:
    """What the Makefile's node_modules target runs, for a bare `pytest` on a fresh clone."""
    if SERVERLESS.exists():
        return
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund"], cwd=ROOT, check=True, capture_output=True
    )


def offline_env(**extra: str) -> dict[str, str]:
    """No credentials and no config: packaging must not need an AWS account."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "REAPER_", "HEARTBEAT_")) and k not in SECRET_VARIABLES
    }
    env.update(
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        REAPER_PYTHON=sys.executable,
        **extra,
    )
    return env


def package(out: Path, build: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """`serverless package` into `out`, the zip into `build` (not the shared build/lambda:
    another test run at the same time must not rebuild this one's zip)."""
    return subprocess.run(
        [
            str(SERVERLESS),
            "package",
            "--stage",
            STAGE,
            "--region",
            "us-east-1",
            "--package",
            str(out),
        ],
        cwd=ROOT,
        env=offline_env(REAPER_BUILD_DIR=str(build), **extra),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lambda")


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory, built: Path) -> Path:
    npm_ci()
    out = tmp_path_factory.mktemp("sls")
    result = package(out, built, REAPER_REAP_EVERY="30m", REAPER_MODE="observe")
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.fixture(scope="module")
def zip_path(packaged: Path, built: Path) -> Path:
    return built / "reaper.zip"


@pytest.fixture(scope="module")
def template(packaged: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (packaged / "cloudformation-template-update-stack.json").read_text()
    )
    return data


def resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def function(template: dict[str, Any], name: str) -> dict[str, Any]:
    logical = f"{name.capitalize()}LambdaFunction"
    props: dict[str, Any] = template["Resources"][logical]["Properties"]
    return props


# --- the template -----------------------------------------------------------------------------


def test_cfn_lint_finds_nothing(packaged: Path) -> None:
    """W3005 is left out: osls writes a DependsOn on each HTTP API route that repeats what
    the route's Ref already enforces — harmless, and osls's output, not ours to rewrite."""
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    result = subprocess.run(
        [str(cfn_lint), "--ignore-checks", "W3005", "--"]
        + [str(p) for p in sorted(packaged.glob("cloudformation-template-*.json"))],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_function_is_python312_on_arm64(template: dict[str, Any]) -> None:
    functions = resources(template, "AWS::Lambda::Function")
    assert {p["Properties"]["FunctionName"] for p in functions.values()} == {
        f"{STACK}-{name}" for name in FUNCTIONS
    }
    for props in (p["Properties"] for p in functions.values()):
        assert props["Runtime"] == "python3.12"
        assert props["Architectures"] == ["arm64"]
        assert props["Code"]["S3Key"].endswith("/reaper.zip")


def test_no_secret_is_in_the_template(template: dict[str, Any]) -> None:
    for name in FUNCTIONS:
        env = function(template, name)["Environment"]["Variables"]
        assert not set(env) & set(SECRET_VARIABLES), name
        assert env["REAPER_SSM_PREFIX"] == f"/reaper/{STAGE}/"
        assert env["REAPER_STATE"] == f"dynamodb://{STACK}"
        assert env["REAPER_MODE"] == "observe", "non-secret settings come from the deploy shell"


def test_sizes_and_retries(template: dict[str, Any]) -> None:
    reap, http = function(template, "reap"), function(template, "http")
    assert (reap["MemorySize"], reap["Timeout"]) == (512, 300)
    assert (http["MemorySize"], http["Timeout"]) == (256, 10)
    configs = resources(template, "AWS::Lambda::EventInvokeConfig")
    assert {c["Properties"]["FunctionName"]["Ref"] for c in configs.values()} == {
        "ReapLambdaFunction",
        "WatchLambdaFunction",
        "DigestLambdaFunction",
    }
    assert {c["Properties"]["MaximumRetryAttempts"] for c in configs.values()} == {0}


def test_the_http_api_routes_and_throttles(template: dict[str, Any]) -> None:
    routes = {
        r["Properties"]["RouteKey"]
        for r in resources(template, "AWS::ApiGatewayV2::Route").values()
    }
    assert routes == {
        "GET /healthz",
        "ANY /ping/{proxy+}",
        "ANY /alert/{key}",
        "ANY /alert/{key}/{host}",
        "ANY /status",
        "$default",
    }
    [stage] = resources(template, "AWS::ApiGatewayV2::Stage").values()
    default = stage["Properties"]["DefaultRouteSettings"]
    per_route = stage["Properties"]["RouteSettings"]
    assert set(per_route) <= routes, "a setting for a route that does not exist"
    rates = {r: per_route.get(r, default)["ThrottlingRateLimit"] for r in routes}
    assert all(rate > 0 for rate in rates.values())
    # The ceiling docs/aws.md's worst-case arithmetic uses.
    assert sum(rates.values()) == 113
    assert rates["ANY /ping/{proxy+}"] == max(rates.values()), "pings get the largest budget"
    [api] = resources(template, "AWS::ApiGatewayV2::Api").values()
    assert api["Properties"]["ProtocolType"] == "HTTP"
    [integration] = resources(template, "AWS::ApiGatewayV2::Integration").values()
    assert integration["Properties"]["PayloadFormatVersion"] == "2.0"


def test_the_table_matches_the_store(template: dict[str, Any]) -> None:
    props = template["Resources"]["StateTable"]["Properties"]
    assert props["KeySchema"] == KEY_SCHEMA
    assert props["AttributeDefinitions"] == ATTRIBUTE_DEFINITIONS
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}
    assert template["Resources"]["StateTable"]["DeletionPolicy"] == "Retain"


def test_the_schedule_follows_reaper_reap_every(template: dict[str, Any]) -> None:
    rules = {
        k: v["Properties"]["ScheduleExpression"]
        for k, v in resources(template, "AWS::Events::Rule").items()
    }
    assert rules == {
        "ReapEventsRuleSchedule1": "rate(30 minutes)",
        "WatchEventsRuleSchedule1": "rate(1 minute)",
        "DigestEventsRuleSchedule1": "cron(0 8 * * ? *)",
    }


# --- the zip ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def entries(zip_path: Path) -> dict[str, int]:
    with zipfile.ZipFile(zip_path) as archive:
        return {info.filename: info.file_size for info in archive.infolist()}


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.split("#")[0].strip())
        if match:
            found[match[1].lower().replace("_", "-")] = match[2]
    return found


def test_the_zip_holds_only_what_runs(entries: dict[str, int]) -> None:
    tops = {name.split("/")[0] for name in entries}
    assert {"reaper", "handlers", "pydantic", "pydantic_core", "httpx"} <= tops
    for absent in ("uvicorn", "boto3", "botocore", "tests", "bench", "infra", "node_modules"):
        assert absent not in tops, absent
    assert not any(n.startswith(("emulators/", "reaper/providers/emulator/")) for n in entries)
    assert "pydantic_core/_pydantic_core.cpython-312-aarch64-linux-gnu.so" in entries
    assert not any(n.endswith(".so") and "x86_64" in n for n in entries)
    assert sum(entries.values()) < MAX_UNZIPPED, f"{sum(entries.values())} bytes unzipped"


def test_the_zip_holds_exactly_the_pinned_distributions(entries: dict[str, int]) -> None:
    wanted = pins(ROOT / "infra" / "aws" / "requirements-lambda.txt")
    shipped = {}
    for name in entries:
        match = re.fullmatch(r"([^/]+)-([^-/]+)\.dist-info/METADATA", name)
        if match:
            shipped[match[1].lower().replace("_", "-")] = match[2]
    assert shipped == wanted


def test_lambda_pins_agree_with_requirements() -> None:
    runtime = pins(ROOT / "requirements.txt")
    lambda_pins = pins(ROOT / "infra" / "aws" / "requirements-lambda.txt")
    for name in ("httpx", "pydantic"):
        assert lambda_pins[name] == runtime[name], name
    assert "uvicorn" not in lambda_pins and "boto3" not in lambda_pins


def test_the_handlers_import_from_the_zip_alone(zip_path: Path, tmp_path: Path) -> None:
    """The zip's own reaper/ and handlers/ (emulators left out) import cleanly; only the
    compiled pydantic_core of this machine stands in for the arm64 one."""
    with zipfile.ZipFile(zip_path) as archive:
        code = [n for n in archive.namelist() if n.startswith(("reaper/", "handlers/"))]
        archive.extractall(tmp_path, members=code)
    site = Path(__import__("pydantic").__file__).parent.parent
    script = (
        "import handlers.reap, handlers.watch, handlers.http, handlers.digest, sys;"
        "assert sys.modules['reaper'].__file__.startswith(sys.argv[1]), sys.modules['reaper'];"
        "print('ok')"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", script, str(tmp_path)],
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{site}", "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.stdout.strip() == "ok", result.stderr


# --- the stack in moto's CloudFormation ---------------------------------------------------------


@pytest.fixture(scope="module")
def stack(packaged: Path, template: dict[str, Any], zip_path: Path) -> Iterator[dict[str, Any]]:
    """Deployed the way `serverless deploy` does it: the create template (the artifact bucket),
    the zip uploaded to its key, then the update template."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_ENV.items():
            patch.setenv(name, value)
        with mock_aws(), warnings.catch_warnings():
            # moto's CloudFormation skips the types it does not model (the HTTP API, the
            # event invoke configs) with a warning; the template tests check those.
            warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)
            cloudformation = boto3.client("cloudformation")
            capabilities = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"]
            cloudformation.create_stack(
                StackName=STACK,
                TemplateBody=(packaged / "cloudformation-template-create-stack.json").read_text(),
                Capabilities=capabilities,
            )
            bucket = cloudformation.describe_stack_resource(
                StackName=STACK, LogicalResourceId="ServerlessDeploymentBucket"
            )["StackResourceDetail"]["PhysicalResourceId"]
            key = function(template, "reap")["Code"]["S3Key"]
            boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=zip_path.read_bytes())
            cloudformation.update_stack(
                StackName=STACK, TemplateBody=json.dumps(template), Capabilities=capabilities
            )
            yield {
                "status": cloudformation.describe_stacks(StackName=STACK)["Stacks"][0][
                    "StackStatus"
                ],
                "lambda": boto3.client("lambda"),
                "events": boto3.client("events"),
                "iam": boto3.client("iam"),
                "dynamodb": boto3.client("dynamodb"),
                "logs": boto3.client("logs"),
            }


def test_the_stack_is_created(stack: dict[str, Any]) -> None:
    assert stack["status"] == "UPDATE_COMPLETE"


def test_the_stack_has_the_table(stack: dict[str, Any]) -> None:
    table = stack["dynamodb"].describe_table(TableName=STACK)["Table"]
    assert table["KeySchema"] == KEY_SCHEMA
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"


def test_the_stack_has_the_functions(stack: dict[str, Any]) -> None:
    found = {f["FunctionName"]: f for f in stack["lambda"].list_functions()["Functions"]}
    assert set(found) == {f"{STACK}-{name}" for name in FUNCTIONS}
    for name in FUNCTIONS:
        assert found[f"{STACK}-{name}"]["Handler"] == f"handlers/{name}.handler"
        assert found[f"{STACK}-{name}"]["Runtime"] == "python3.12"
    http = stack["lambda"].get_function_concurrency(FunctionName=f"{STACK}-http")
    assert http["ReservedConcurrentExecutions"] == 5
    for name in FUNCTIONS - {"http"}:
        answer = stack["lambda"].get_function_concurrency(FunctionName=f"{STACK}-{name}")
        assert "ReservedConcurrentExecutions" not in answer, name


def test_the_stack_has_the_schedules(stack: dict[str, Any]) -> None:
    events = stack["events"]
    schedules = {}
    for rule in events.list_rules()["Rules"]:
        [target] = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
        schedules[target["Arn"].rsplit(":", 1)[-1]] = rule["ScheduleExpression"]
    assert schedules == {
        f"{STACK}-reap": "rate(30 minutes)",
        f"{STACK}-watch": "rate(1 minute)",
        f"{STACK}-digest": "cron(0 8 * * ? *)",
    }


def test_the_stack_has_a_least_privilege_policy(stack: dict[str, Any]) -> None:
    iam = stack["iam"]
    [role] = [r for r in iam.list_roles()["Roles"] if r["RoleName"].startswith(STACK)]
    [policy_name] = iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"]
    document = iam.get_role_policy(RoleName=role["RoleName"], PolicyName=policy_name)[
        "PolicyDocument"
    ]
    # moto keeps a policy made by CloudFormation as the text of a Python dict.
    statements = (ast.literal_eval(document) if isinstance(document, str) else document)[
        "Statement"
    ]
    actions = {a for s in statements for a in s["Action"]}
    assert actions == {
        "logs:CreateLogStream",
        "logs:CreateLogGroup",
        "logs:TagResource",
        "logs:PutLogEvents",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:ConditionCheckItem",
        "ssm:GetParametersByPath",
    }
    for statement in statements:
        assert statement["Effect"] == "Allow"
        resources = statement["Resource"]
        assert "*" not in resources
        if statement["Action"][0].startswith("dynamodb:"):
            assert resources == [f"arn:aws:dynamodb:us-east-1:123456789012:table/{STACK}"]
        if statement["Action"][0].startswith("ssm:"):
            assert resources == [
                f"arn:aws:ssm:us-east-1:123456789012:parameter/reaper/{STAGE}",
                f"arn:aws:ssm:us-east-1:123456789012:parameter/reaper/{STAGE}/*",
            ]


def test_the_stack_keeps_logs_two_weeks(stack: dict[str, Any]) -> None:
    groups = stack["logs"].describe_log_groups(logGroupNamePrefix=f"/aws/lambda/{STACK}")
    assert {g["logGroupName"]: g["retentionInDays"] for g in groups["logGroups"]} == {
        f"/aws/lambda/{STACK}-{name}": 14 for name in FUNCTIONS
    }


# --- the schedule from REAPER_REAP_EVERY ----------------------------------------------------------


RATES = {
    "1m": "rate(1 minute)",
    "5m": "rate(5 minutes)",
    "1h": "rate(1 hour)",
    "90m": "rate(90 minutes)",
    "1h30m": "rate(90 minutes)",
    "120m": "rate(2 hours)",
    "1d": "rate(1 day)",
    "2d": "rate(2 days)",
    "3600s": "rate(1 hour)",
}
BAD = ["90s", "30s", "1", "0m", "1x", "", "h"]


def test_durations_become_eventbridge_rates() -> None:
    script = (
        "const {rateExpression} = require('./infra/aws/reaper-plugin.js');"
        "const out = {};"
        f"for (const d of {json.dumps([*RATES, *BAD])}) {{"
        "  try { out[d] = rateExpression('REAPER_REAP_EVERY', d); }"
        "  catch (e) { out[d] = 'error: ' + e.message; }"
        "}"
        "console.log(JSON.stringify(out));"
    )
    result = subprocess.run(
        ["node", "-e", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    answers = json.loads(result.stdout)
    for duration, rate in RATES.items():
        assert answers[duration] == rate, duration
    for duration in BAD:
        assert answers[duration].startswith("error: REAPER_REAP_EVERY: "), duration


def test_a_bad_schedule_fails_the_package_naming_the_variable(
    packaged: Path, tmp_path: Path
) -> None:
    result = package(tmp_path / "bad", tmp_path / "build", REAPER_REAP_EVERY="45s")
    assert result.returncode != 0
    assert (
        "REAPER_REAP_EVERY: EventBridge schedules in whole minutes" in result.stdout + result.stderr
    )
