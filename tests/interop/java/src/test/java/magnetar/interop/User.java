package magnetar.interop;

import java.util.Objects;

/**
 * The record the cross-language tests exchange. Its package and field types give the Avro schema
 * {"type":"record","name":"User","namespace":"magnetar.interop","fields":[age: int, name: string]},
 * the same schema the Go and Python sides declare.
 */
public class User {
    public String name;
    public int age;

    public User() {}

    public User(String name, int age) {
        this.name = name;
        this.age = age;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof User u && Objects.equals(name, u.name) && age == u.age;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, age);
    }

    @Override
    public String toString() {
        return "User(" + name + ", " + age + ")";
    }
}
