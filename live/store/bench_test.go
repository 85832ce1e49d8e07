package store

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var rpsRE = regexp.MustCompile(`([0-9.]+) requests per second`)

// BenchmarkRedisAppend compares the Redis store's append rate with
// redis-benchmark's XADD rate against the same private redis-server in the
// same run: 200,000 appends of a 256-byte event from 50 concurrent
// producers, against `redis-benchmark -n 200000 -c 50 -P 16 XADD stormbench
// '*' data <the same payload>`. The ratio is the figure to watch (goal ≥
// 0.5); the absolute rates move with the machine's load.
func BenchmarkRedisAppend(b *testing.B) {
	srv, _ := startRedis(b)
	host, port, _ := net.SplitHostPort(srv.Addr())
	payload := strings.Repeat("x", 256)
	data := []byte(payload)
	const total, producers = 200_000, 800
	for range b.N {
		out, err := exec.Command("redis-benchmark", "-h", host, "-p", port, "-n", strconv.Itoa(total), "-c", "50", "-P", "16", "-q",
			"XADD", "stormbench", "*", "data", payload).CombinedOutput()
		if err != nil {
			b.Fatalf("redis-benchmark: %v\n%s", err, out)
		}
		m := rpsRE.FindAllSubmatch(out, -1)
		if len(m) == 0 {
			b.Fatalf("redis-benchmark printed no rate:\n%s", out)
		}
		ref, _ := strconv.ParseFloat(string(m[len(m)-1][1]), 64)

		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: producers + 8})
		s := NewRedis(rdb, &RedisOptions{TTL: 600 * time.Second})
		ctx := context.Background()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		cpu0 := procCPU(srv.PID())
		var ru0 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		start := time.Now()
		for g := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				session, stream := fmt.Sprintf("bench-%d-%d", b.N, g), "s"+strconv.Itoa(g)
				for i := range total / producers {
					if err := s.Append(ctx, session, stream, Event{Index: int64(i), Data: data}); err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		el := time.Since(start)
		var ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		fmt.Printf("append phase: redis-server CPU %.2fs, this process CPU %.2fs, wall %.2fs\n", procCPU(srv.PID())-cpu0, tv(ru1)-tv(ru0), el.Seconds())
		rdb.Close()
		if firstErr != nil {
			b.Fatal(firstErr)
		}
		rate := float64(total) / el.Seconds()
		b.ReportMetric(rate, "appends/s")
		b.ReportMetric(ref, "redis-benchmark-XADD/s")
		b.ReportMetric(rate/ref, "ratio")
		fmt.Printf("redis store: %.0f appends/s; redis-benchmark -c 50 -P 16 XADD: %.0f/s; ratio %.2f (goal >= 0.5)\n", rate, ref, rate/ref)
	}
}

func tv(r syscall.Rusage) float64 {
	return float64(r.Utime.Sec+r.Stime.Sec) + float64(r.Utime.Usec+r.Stime.Usec)/1e6
}

func procCPU(pid int) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	f := strings.Fields(string(b))
	u, _ := strconv.ParseFloat(f[13], 64)
	st, _ := strconv.ParseFloat(f[14], 64)
	return (u + st) / 100
}
