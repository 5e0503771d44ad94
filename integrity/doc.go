// Package integrity finds corruption on a tablebase host before users do:
//
//   - Status reads LVM's view of each RAID + dm-integrity array: integrity
//     mode and block size, the mismatch counter of every image and the disk
//     under it, raid_mismatch_count, sync action and health.
//   - Scrub reads every block of every image through its dm-integrity layer
//     (so parity and cold data are verified too), throttled, backing off when
//     the member disks' read latency rises, time-boxed and resumable from a
//     state file; or drives `lvchange --syncaction check` instead.
//   - Verify checks table files against published checksum lists, cheaply
//     (size, the 16-byte trailer the generator embeds) and by hashing.
//
// Nothing here writes to a device. External programs run through an
// execx.Runner; time goes through a Clock so throttling is testable.
package integrity
