package blockdev

// SerialUnder returns the serial of the disk kernelName (sda, nvme0n1; a
// partition's is its disk's) under root, by the rule Read fills
// Device.Serial with (udev's ID_SERIAL_SHORT, then device/serial, then the
// VPD page 0x80): "" when none is known. tbhost monitor names a slow disk
// by it.
func SerialUnder(root, kernelName string) string {
	h := newHostFS(root)
	base := "/sys/block/" + kernelName
	if !h.exists(base) {
		for _, disk := range h.readDir("/sys/block") {
			if h.exists("/sys/block/" + disk + "/" + kernelName + "/partition") {
				base = "/sys/block/" + disk
				break
			}
		}
	}
	if !h.exists(base) {
		return ""
	}
	return diskSerial(h, base, readUdev(h, h.readString(base+"/dev")))
}
