// The engine's UTF-8 rules are the public ones (include/mvkv/utf8.h):
// internal code includes them by this older path too.
#pragma once
#include "mvkv/utf8.h"
