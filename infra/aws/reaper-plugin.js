'use strict';

// A local osls plugin, two small jobs that serverless.yml cannot do by itself:
//
// 1. `${reaperRate:VARIABLE}` turns a duration of the public contract (REAPER_REAP_EVERY=1h,
//    REAPER_WATCH_EVERY=1m, read from the deploying shell's environment, contract default when
//    unset) into an EventBridge rate expression, `rate(1 hour)`, so that the same variable
//    drives the schedule on AWS and under `reaper serve`. The grammar is the one of
//    reaper/settings/parse.py (`<int>` + s/m/h/d/w, compounds like 1h30m); EventBridge counts in whole
//    minutes, so anything else fails the deploy with one line naming the variable.
//    `${reaperCron:REAPER_DIGEST_AT}` does the same for the digest's time of day (HH:MM, UTC,
//    08:00 when unset): `cron(0 8 * * ? *)`, the time `reaper serve` sends it too.
// 2. Before packaging, it builds the functions' zip (infra/aws/build_package.py): arm64 wheels
//    from pip, no Docker, no AWS call. Python: REAPER_PYTHON, else the active virtualenv, else
//    .venv, else python3.

const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const DEFAULTS = { REAPER_REAP_EVERY: '1h', REAPER_WATCH_EVERY: '1m' };
const CRON_DEFAULTS = { REAPER_DIGEST_AT: '08:00' };
const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

function parseDuration(variable, text) {
  const cleaned = String(text).trim().toLowerCase();
  if (!/^(\d+[smhdw])+$/.test(cleaned)) {
    throw new Error(
      `${variable}: expected a duration like 30m, 1h or 1h30m, got ${JSON.stringify(text)}`
    );
  }
  let seconds = 0;
  for (const [, number, unit] of cleaned.matchAll(/(\d+)([smhdw])/g)) {
    seconds += Number(number) * UNIT_SECONDS[unit];
  }
  return seconds;
}

function rateExpression(variable, text) {
  const seconds = parseDuration(variable, text);
  if (seconds < 60 || seconds % 60 !== 0) {
    throw new Error(
      `${variable}: EventBridge schedules in whole minutes (at least 1m), got ${JSON.stringify(text)}`
    );
  }
  const minutes = seconds / 60;
  const [value, unit] =
    minutes % 1440 === 0
      ? [minutes / 1440, 'day']
      : minutes % 60 === 0
        ? [minutes / 60, 'hour']
        : [minutes, 'minute'];
  return `rate(${value} ${unit}${value === 1 ? '' : 's'})`;
}

// HH:MM (UTC, the grammar of reaper/settings/parse.py's REAPER_DIGEST_AT) -> cron(M H * * ? *).
function cronExpression(variable, text) {
  const match = /^(\d{1,2}):(\d{2})$/.exec(String(text).trim());
  if (!match || Number(match[1]) > 23 || Number(match[2]) > 59) {
    throw new Error(
      `${variable}: expected a UTC time of day like 08:00 or 17:30, got ${JSON.stringify(text)}`
    );
  }
  return `cron(${Number(match[2])} ${Number(match[1])} * * ? *)`;
}

function python(serviceDir) {
  if (process.env.REAPER_PYTHON) return process.env.REAPER_PYTHON;
  if (process.env.VIRTUAL_ENV) return path.join(process.env.VIRTUAL_ENV, 'bin', 'python');
  const local = path.join(serviceDir, '.venv', 'bin', 'python');
  return fs.existsSync(local) ? local : 'python3';
}

class ReaperPlugin {
  constructor(serverless) {
    this.serverless = serverless;
    this.configurationVariablesSources = {
      reaperRate: {
        resolve({ address }) {
          if (!Object.prototype.hasOwnProperty.call(DEFAULTS, address)) {
            throw new Error(`reaperRate: unknown variable ${JSON.stringify(address)}`);
          }
          const raw = process.env[address];
          const text = raw && raw.trim() ? raw : DEFAULTS[address];
          return { value: rateExpression(address, text) };
        },
      },
      reaperCron: {
        resolve({ address }) {
          if (!Object.prototype.hasOwnProperty.call(CRON_DEFAULTS, address)) {
            throw new Error(`reaperCron: unknown variable ${JSON.stringify(address)}`);
          }
          const raw = process.env[address];
          const text = raw && raw.trim() ? raw : CRON_DEFAULTS[address];
          return { value: cronExpression(address, text) };
        },
      },
    };
    this.hooks = {
      'before:package:createDeploymentArtifacts': () => this.buildPackage(),
    };
  }

  buildPackage() {
    const serviceDir = this.serverless.serviceDir;
    const script = path.join(serviceDir, 'infra', 'aws', 'build_package.py');
    // REAPER_BUILD_DIR: where the zip goes (serverless.yml reads the same variable).
    const out = path.resolve(serviceDir, process.env.REAPER_BUILD_DIR || path.join('build', 'lambda'));
    const result = spawnSync(python(serviceDir), [script, '--out', out], {
      cwd: serviceDir,
      stdio: 'inherit',
    });
    if (result.error || result.status !== 0) {
      const why = result.error ? result.error.message : `exit ${result.status}`;
      throw new Error(`building the Lambda package failed (${why})`);
    }
  }
}

module.exports = ReaperPlugin;
module.exports.rateExpression = rateExpression;
module.exports.cronExpression = cronExpression;
