// Command diskfull drives a magnetar broker whose data directory is on a small file system with the
// official Go client, through a full disk: tests/e2e/test_disk_full_clients.py runs it and checks the
// JSON it prints. It fills the disk (a filler file leaving 3 MiB), sends 40 kB messages until a send
// fails, times that failure and the next send's, receives and acknowledges everything stored, removes
// the filler, and times how long the same producer takes to publish again.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

const sendTimeout = 10 * time.Second

// result is what the test checks.
type result struct {
	Confirmed      []int   `json:"confirmed"`
	FailError      string  `json:"fail_error"`
	FailBlocked    bool    `json:"fail_blocked"`
	FailSeconds    float64 `json:"fail_seconds"`
	NextError      string  `json:"next_error"`
	NextSeconds    float64 `json:"next_seconds"`
	Received       []int   `json:"received"`
	ResumedSeconds float64 `json:"resumed_seconds"`
}

func payload(i int) []byte {
	head := fmt.Sprintf("full-%05d:", i)
	body := make([]byte, 40000)
	copy(body, head)
	return body
}

func fill(dir string, leave uint64) (string, error) {
	var stats syscall.Statfs_t
	if err := syscall.Statfs(dir, &stats); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "filler")
	out, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer out.Close()
	chunk := make([]byte, 1<<20)
	for remaining := int64(stats.Bavail*uint64(stats.Bsize)) - int64(leave); remaining > 0; {
		n := int64(len(chunk))
		if remaining < n {
			n = remaining
		}
		written, err := out.Write(chunk[:n])
		if err != nil {
			return "", err
		}
		remaining -= int64(written)
	}
	return path, nil
}

func send(producer pulsar.Producer, i int) (float64, error) {
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*sendTimeout)
	defer cancel()
	_, err := producer.Send(ctx, &pulsar.ProducerMessage{Payload: payload(i)})
	return time.Since(started).Seconds(), err
}

func run(url, dir, topic string) (*result, error) {
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: 15 * time.Second, Logger: log.DefaultNopLogger()})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	consumer, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "live"})
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: sendTimeout, DisableBatching: true})
	if err != nil {
		return nil, err
	}
	defer producer.Close()
	filler, err := fill(dir, 3<<20)
	if err != nil {
		return nil, err
	}
	out := &result{Confirmed: []int{}, Received: []int{}}
	for i := 0; i < 400; i++ {
		took, failure := send(producer, i)
		if failure != nil {
			out.FailError, out.FailSeconds = failure.Error(), took
			out.FailBlocked = errors.Is(failure, pulsar.ErrProducerBlockedQuotaExceeded)
			break
		}
		out.Confirmed = append(out.Confirmed, i)
	}
	if took, next := send(producer, 1000); next != nil {
		out.NextError, out.NextSeconds = next.Error(), took
	}
	for {
		// up to 3 s for each confirmed message, then 0.5 s of silence: nothing unconfirmed follows
		wait := 3 * time.Second
		if len(out.Received) >= len(out.Confirmed) {
			wait = 500 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		msg, err := consumer.Receive(ctx)
		cancel()
		if err != nil {
			break
		}
		var index int
		fmt.Sscanf(string(msg.Payload()[5:10]), "%d", &index)
		out.Received = append(out.Received, index)
		if err := consumer.Ack(msg); err != nil {
			return nil, err
		}
	}
	if err := os.Remove(filler); err != nil {
		return nil, err
	}
	freed := time.Now()
	for {
		if _, err := send(producer, 9999); err == nil {
			break
		}
		if time.Since(freed) > time.Minute {
			return nil, errors.New("publishing did not resume within a minute of space being freed")
		}
	}
	out.ResumedSeconds = time.Since(freed).Seconds()
	return out, nil
}

func main() {
	url := flag.String("url", "pulsar://127.0.0.1:6650", "service URL")
	dir := flag.String("dir", "", "the small file system holding the broker's data directory")
	topic := flag.String("topic", "persistent://public/default/go-disk-full", "topic")
	flag.Parse()
	out, err := run(*url, *dir, *topic)
	if err != nil {
		fmt.Fprintln(os.Stderr, "diskfull:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
