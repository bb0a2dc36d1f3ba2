// mvkv/mvkv.h: the whole public API of mvkv (docs/embedding.md).
// No stable ABI is promised yet: rebuild against the headers of the
// library you link. Build flags: `pkg-config --cflags --libs mvkv`.
#pragma once

#include "mvkv/change_stream.h"
#include "mvkv/check.h"
#include "mvkv/cursor.h"
#include "mvkv/document_locks.h"
#include "mvkv/engine.h"
#include "mvkv/failpoint.h"
#include "mvkv/oplog.h"
#include "mvkv/options.h"
#include "mvkv/replica_set.h"
#include "mvkv/session.h"
#include "mvkv/stats.h"
#include "mvkv/status.h"
#include "mvkv/timestamp.h"
#include "mvkv/utf8.h"
#include "mvkv/version.h"
