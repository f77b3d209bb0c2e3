# SPDX-License-Identifier: Apache-2.0
"""Run an MPI program under one MPI's launcher with libmalleo_pmpi preloaded into the ranks only."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'python'))
# What the pmpi checks take from the shared module, as pmpi_launch.NAME.
from testkit import (LAUNCHERS, SKIP, apps_at, launcher_command,  # noqa: E402,F401
                     profiled_launcher_env as launcher_env, run_profiled as run, start_plain_agent, verdict)
