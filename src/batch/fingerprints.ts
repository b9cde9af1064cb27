/**
 * A set of strings kept as 64-bit fingerprints in one typed array (open
 * addressing): 8 bytes an entry whatever the strings' length, so remembering
 * a million `custom_id`s costs about 16 MiB, not the strings themselves.
 *
 * Two different ids sharing a fingerprint (a false "already seen") has a
 * probability of about n² / 2⁶⁵: under 3 × 10⁻⁸ for a million ids.
 */

/** Two independent 32-bit hashes of the string's UTF-16 units (FNV-1a and a multiplicative mix). */
const fingerprint = (text: string): [number, number] => {
  let a = 0x811c9dc5
  let b = 0x9e3779b9 ^ text.length
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul(b ^ c, 0x85ebca6b)
    b ^= b >>> 13
  }
  a ^= a >>> 16
  b = Math.imul(b ^ (b >>> 16), 0xc2b2ae35)
  b ^= b >>> 16
  // 0/0 marks an empty slot.
  return [a >>> 0, (b >>> 0) || 1]
}

export class FingerprintSet {
  private slots = new Uint32Array(2 * 1024)
  private count = 0

  get size(): number {
    return this.count
  }

  has(text: string): boolean {
    const [a, b] = fingerprint(text)
    return this.find(a, b) >= 0
  }

  /** Adds `text`; false when it (or its fingerprint) was already there. */
  add(text: string): boolean {
    const [a, b] = fingerprint(text)
    if (this.find(a, b) >= 0) return false
    if ((this.count + 1) * 2 > this.slots.length / 2) this.grow()
    this.insert(a, b)
    this.count++
    return true
  }

  private find(a: number, b: number): number {
    const mask = this.slots.length / 2 - 1
    for (let i = a & mask; ; i = (i + 1) & mask) {
      const sb = this.slots[2 * i + 1]
      if (sb === 0) return -1
      if (this.slots[2 * i] === a && sb === b) return i
    }
  }

  private insert(a: number, b: number): void {
    const mask = this.slots.length / 2 - 1
    let i = a & mask
    while (this.slots[2 * i + 1] !== 0) i = (i + 1) & mask
    this.slots[2 * i] = a
    this.slots[2 * i + 1] = b
  }

  private grow(): void {
    const old = this.slots
    this.slots = new Uint32Array(old.length * 2)
    for (let i = 0; i < old.length; i += 2) if (old[i + 1] !== 0) this.insert(old[i], old[i + 1])
  }
}
