// The engine's Status is the public one (include/mvkv/status.h): internal
// code includes it by this older path too.
#pragma once
#include "mvkv/status.h"
