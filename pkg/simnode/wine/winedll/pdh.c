/*
 * pdh.dll for Wine 8.0, whose own pdh.dll knows only a few performance
 * counters: the kubelet for Windows (k8s.io/kubernetes/pkg/kubelet/winstats,
 * through github.com/JeffAshton/win_pdh) resolves eight pdh functions when
 * it starts and reads the node's processor time, memory and network
 * adapter counters; with Wine's pdh.dll it exits at the memory counter.
 * This one serves those counters from calls Wine has: the processor time
 * from GetSystemTimes between two collections, the memory counters from
 * GlobalMemoryStatusEx, and one network adapter whose counters are zero.
 * simnode builds it with mingw-w64 into the system32 of every Wine prefix
 * it boots and makes Wine load it instead of its own (pkg/simnode/wine/wine.go).
 */
#include <windows.h>
#include <wchar.h>

#define PDH_MORE_DATA ((LONG)0x800007D2L)
#define PDH_INVALID_HANDLE ((LONG)0xC0000BBCL)
#define PDH_INVALID_ARGUMENT ((LONG)0xC0000BBDL)
#define PDH_CSTATUS_NO_OBJECT ((LONG)0xC0000BB8L)
#define PDH_CSTATUS_NO_COUNTER ((LONG)0xC0000BB9L)
#define PDH_CSTATUS_VALID_DATA 0
#define PDH_FMT_LONG 0x00000100
#define PDH_FMT_DOUBLE 0x00000200
#define PDH_FMT_LARGE 0x00000400

typedef struct {
	DWORD CStatus;
	union {
		LONG longValue;
		double doubleValue;
		LONGLONG largeValue;
		LPCSTR AnsiStringValue;
		LPCWSTR WideStringValue;
	};
} PDH_FMT_COUNTERVALUE;

typedef struct {
	LPWSTR szName;
	PDH_FMT_COUNTERVALUE FmtValue;
} PDH_FMT_COUNTERVALUE_ITEM_W;

enum kind { PROCESSOR_TIME = 1, WORKING_SET_PRIVATE, COMMITTED_BYTES, NETWORK_ADAPTER };

struct query;

struct counter {
	enum kind kind;
	struct query *query;
	struct counter *next;
	ULONGLONG idle[2], busy[2]; /* [0] the previous collection, [1] the last */
	int collected;
};

struct query {
	DWORD magic;
	struct counter *counters;
};

#define QUERY_MAGIC 0x51484450 /* "PDHQ" */

static const struct {
	const WCHAR *path;
	enum kind kind;
} known[] = {
	{L"\\Processor(_Total)\\% Processor Time", PROCESSOR_TIME},
	{L"\\Process(_Total)\\Working Set - Private", WORKING_SET_PRIVATE},
	{L"\\Memory\\Committed Bytes", COMMITTED_BYTES},
	{L"\\Network Adapter(*)\\", NETWORK_ADAPTER}, /* a prefix: every adapter counter */
};

static const WCHAR adapter[] = L"Ethernet";

static enum kind kind_of(LPCWSTR path)
{
	unsigned i;
	if (path == NULL)
		return 0;
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		size_t n = wcslen(known[i].path);
		if (known[i].kind == NETWORK_ADAPTER ? _wcsnicmp(path, known[i].path, n) == 0 && path[n] != 0
						     : _wcsicmp(path, known[i].path) == 0)
			return known[i].kind;
	}
	return 0;
}

static ULONGLONG ft(FILETIME f)
{
	return ((ULONGLONG)f.dwHighDateTime << 32) | f.dwLowDateTime;
}

static double value_of(struct counter *c)
{
	MEMORYSTATUSEX m;
	ULONGLONG idle, busy;
	switch (c->kind) {
	case PROCESSOR_TIME:
		if (c->collected < 2)
			return 0;
		idle = c->idle[1] - c->idle[0];
		busy = c->busy[1] - c->busy[0];
		return idle + busy == 0 ? 0 : 100.0 * (double)busy / (double)(idle + busy);
	case WORKING_SET_PRIVATE:
	case COMMITTED_BYTES:
		m.dwLength = sizeof(m);
		if (!GlobalMemoryStatusEx(&m))
			return 0;
		if (c->kind == WORKING_SET_PRIVATE)
			return (double)(m.ullTotalPhys - m.ullAvailPhys);
		return (double)(m.ullTotalPageFile - m.ullAvailPageFile);
	default:
		return 0;
	}
}

static void format(double v, DWORD fmt, PDH_FMT_COUNTERVALUE *out)
{
	out->CStatus = PDH_CSTATUS_VALID_DATA;
	if (fmt & PDH_FMT_LARGE)
		out->largeValue = (LONGLONG)v;
	else if (fmt & PDH_FMT_LONG)
		out->longValue = (LONG)v;
	else
		out->doubleValue = v;
}

LONG WINAPI PdhOpenQuery(LPCWSTR source, DWORD_PTR user, HANDLE *query)
{
	struct query *q;
	(void)source;
	(void)user;
	if (query == NULL)
		return PDH_INVALID_ARGUMENT;
	q = HeapAlloc(GetProcessHeap(), HEAP_ZERO_MEMORY, sizeof(*q));
	if (q == NULL)
		return ERROR_OUTOFMEMORY;
	q->magic = QUERY_MAGIC;
	*query = q;
	return ERROR_SUCCESS;
}

LONG WINAPI PdhOpenQueryW(LPCWSTR source, DWORD_PTR user, HANDLE *query)
{
	return PdhOpenQuery(source, user, query);
}

LONG WINAPI PdhAddCounterW(HANDLE query, LPCWSTR path, DWORD_PTR user, HANDLE *counter)
{
	struct query *q = query;
	struct counter *c;
	enum kind k;
	(void)user;
	if (q == NULL || q->magic != QUERY_MAGIC)
		return PDH_INVALID_HANDLE;
	if (counter == NULL)
		return PDH_INVALID_ARGUMENT;
	k = kind_of(path);
	if (k == 0)
		return PDH_CSTATUS_NO_COUNTER;
	c = HeapAlloc(GetProcessHeap(), HEAP_ZERO_MEMORY, sizeof(*c));
	if (c == NULL)
		return ERROR_OUTOFMEMORY;
	c->kind = k;
	c->query = q;
	c->next = q->counters;
	q->counters = c;
	*counter = c;
	return ERROR_SUCCESS;
}

LONG WINAPI PdhAddEnglishCounterW(HANDLE query, LPCWSTR path, DWORD_PTR user, HANDLE *counter)
{
	return PdhAddCounterW(query, path, user, counter);
}

LONG WINAPI PdhCollectQueryData(HANDLE query)
{
	struct query *q = query;
	struct counter *c;
	FILETIME idle, kernel, user;
	if (q == NULL || q->magic != QUERY_MAGIC)
		return PDH_INVALID_HANDLE;
	if (!GetSystemTimes(&idle, &kernel, &user))
		return (LONG)GetLastError();
	for (c = q->counters; c != NULL; c = c->next) {
		c->idle[0] = c->idle[1];
		c->busy[0] = c->busy[1];
		c->idle[1] = ft(idle);
		/* the kernel time includes the idle time */
		c->busy[1] = ft(kernel) - ft(idle) + ft(user);
		if (c->collected < 2)
			c->collected++;
	}
	return ERROR_SUCCESS;
}

LONG WINAPI PdhGetFormattedCounterValue(HANDLE counter, DWORD fmt, LPDWORD type, PDH_FMT_COUNTERVALUE *value)
{
	struct counter *c = counter;
	if (c == NULL)
		return PDH_INVALID_HANDLE;
	if (value == NULL)
		return PDH_INVALID_ARGUMENT;
	if (type != NULL)
		*type = 0;
	format(value_of(c), fmt, value);
	return ERROR_SUCCESS;
}

LONG WINAPI PdhGetFormattedCounterArrayW(HANDLE counter, DWORD fmt, LPDWORD size, LPDWORD count,
					 PDH_FMT_COUNTERVALUE_ITEM_W *items)
{
	struct counter *c = counter;
	const WCHAR *name = c != NULL && c->kind == NETWORK_ADAPTER ? adapter : L"_Total";
	DWORD need = sizeof(PDH_FMT_COUNTERVALUE_ITEM_W) + (DWORD)((wcslen(name) + 1) * sizeof(WCHAR));
	WCHAR *copy;
	if (c == NULL)
		return PDH_INVALID_HANDLE;
	if (size == NULL || count == NULL)
		return PDH_INVALID_ARGUMENT;
	*count = 1;
	if (items == NULL || *size < need) {
		*size = need;
		return PDH_MORE_DATA;
	}
	*size = need;
	copy = (WCHAR *)(items + 1);
	wcscpy(copy, name);
	items[0].szName = copy;
	format(value_of(c), fmt, &items[0].FmtValue);
	return ERROR_SUCCESS;
}

LONG WINAPI PdhValidatePathW(LPCWSTR path)
{
	return kind_of(path) != 0 ? ERROR_SUCCESS : PDH_CSTATUS_NO_COUNTER;
}

LONG WINAPI PdhCloseQuery(HANDLE query)
{
	struct query *q = query;
	struct counter *c, *next;
	if (q == NULL || q->magic != QUERY_MAGIC)
		return PDH_INVALID_HANDLE;
	for (c = q->counters; c != NULL; c = next) {
		next = c->next;
		HeapFree(GetProcessHeap(), 0, c);
	}
	q->magic = 0;
	HeapFree(GetProcessHeap(), 0, q);
	return ERROR_SUCCESS;
}
