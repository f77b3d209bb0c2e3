// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

namespace malleo::pmpi {

// The job id the launcher exports (Open MPI, Slurm, PBS), or empty: MPICH's hydra exports none.
std::string launcherJobId();

// From the MPI_Init wrapper: whether MPI_Comm_spawn started this job, which its report's name says.
void noteJobOrigin();

// Collective over MPI_COMM_WORLD, from the MPI_Finalize wrapper before PMPI_Finalize: every rank's
// profile goes to rank 0, which writes malleo-profile-<app>-<job>.json and .txt (<job>: MALLEO_JOB_TAG when set, with
// .spawn<job id> after it in a spawned job, else the launcher's job id) into
// MALLEO_PROFILE_DIR (default: the current directory) and names them on stderr.
void writeJobReport();

// This rank alone (MPI_Abort, exit without MPI_Finalize): malleo-profile-<app>-<job>.rank<N>.json
// and .txt.
void writeRankReport(const char *ended);

} // namespace malleo::pmpi
