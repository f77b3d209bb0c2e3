// SPDX-License-Identifier: Apache-2.0
// Whether the directories above the run directory are safe: whoever may change one of them can swap the run
// directory (or a parent of it) for a link to a directory of their own between two of the agent's steps, and the
// agent would then write its files, and answer on its socket, where that user says.
#pragma once

#include <string>

namespace malleo {

// Every existing directory above `dir`, as written and as the links in it resolve, must belong to root or to this
// user and be writable by no one else, except a sticky one (/tmp) whose entry on the way belongs to root or to this
// user (the sticky bit keeps others from renaming or removing it). An empty string, or one line naming the directory
// and the fix.
std::string parentsRefusal(const std::string &dir);

} // namespace malleo
