#include "textflag.h"

// func prefetchLines(p unsafe.Pointer, n int)
// Asks the CPU to bring the n cache lines from p into its caches, without
// waiting for them: PREFETCHT0 neither faults nor changes anything a
// program can observe, only when a later load finds its line.
TEXT ·prefetchLines(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ loop
done:
	RET
