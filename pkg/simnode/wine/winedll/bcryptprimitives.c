/*
 * bcryptprimitives.dll for Wine 8.0, which lacks it: Go 1.22 and later
 * Windows programs import ProcessPrng from it to read random bytes. This
 * one implements ProcessPrng on top of RtlGenRandom (advapi32's
 * SystemFunction036), which Wine has. simnode builds it with mingw-w64
 * (x86_64-w64-mingw32-gcc) into the system32 of every Wine prefix it
 * boots (pkg/simnode/wine/wine.go).
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
